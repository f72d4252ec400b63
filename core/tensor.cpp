#include "core/tensor.h"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace sparseattn {

namespace {

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(pages) * static_cast<int64_t>(page_size);
}

}  // namespace

std::string shape_text(const Shape& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

int64_t checked_numel(const Shape& shape, int64_t element_bytes, const std::string& what) {
  const int64_t limit = physical_memory_bytes();
  int64_t n = 1;
  for (int64_t d : shape) {
    require(d >= 0, what, shape_text(shape), "every dimension must be >= 0");
    if (d == 0) return 0;
    // n * d * element_bytes <= limit, without overflowing.
    if (n > limit / element_bytes / d)
      throw MemoryLimitError(what, shape_text(shape),
                             "the buffer must fit in physical memory (" + std::to_string(limit) +
                                 " bytes)");
    n *= d;
  }
  return n;
}

Shape as_rank4(const Shape& shape, const std::string& what) {
  require(shape.size() >= 2 && shape.size() <= 4, what + " shape", shape_text(shape),
          "rank must be 2 ([seq_len, head_dim]), 3 or 4 ([batch, num_heads, seq_len, head_dim])");
  Shape out(4 - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

AttentionShape attention_shape(const Shape& q_in, const Shape& k_in, const Shape& v_in,
                               KvHeads kv_heads) {
  const Shape q = as_rank4(q_in, "q"), k = as_rank4(k_in, "k"), v = as_rank4(v_in, "v");
  const char* names[4] = {"batch", "num_heads", "seq_len", "head_dim"};
  for (int a = 0; a < 4; ++a) {
    require(q[a] >= 1, std::string("q ") + names[a], q[a], "must be >= 1");
    require(k[a] >= 1, std::string("k ") + names[a], k[a], "must be >= 1");
    require(v[a] >= 1, std::string("v ") + names[a], v[a], "must be >= 1");
  }
  require(k[0] == q[0], "k batch", k[0], "must equal q batch (" + std::to_string(q[0]) + ")");
  require(v[0] == q[0], "v batch", v[0], "must equal q batch (" + std::to_string(q[0]) + ")");
  if (kv_heads == KvHeads::grouped) {
    // contract §2.7: H_q = g·H_kv; v has the heads of k.
    require(q[1] % k[1] == 0, "k num_heads", k[1],
            "must divide q num_heads (" + std::to_string(q[1]) +
                ") for grouped-query attention");
    require(v[1] == k[1], "v num_heads", v[1],
            "must equal k num_heads (" + std::to_string(k[1]) + ")");
  } else {
    require(k[1] == q[1], "k num_heads", k[1],
            "must equal q num_heads (" + std::to_string(q[1]) +
                "); this implementation does not serve grouped-query heads");
    require(v[1] == q[1], "v num_heads", v[1],
            "must equal q num_heads (" + std::to_string(q[1]) + ")");
  }
  require(k[3] == q[3], "k head_dim", k[3],
          "must equal q head_dim (" + std::to_string(q[3]) + ")");
  require(v[2] == k[2], "v seq_len", v[2],
          "must equal k seq_len (" + std::to_string(k[2]) + ")");
  AttentionShape s;
  s.batch = q[0];
  s.num_heads = q[1];
  s.num_kv_heads = k[1];
  s.seq_len_q = q[2];
  s.seq_len_k = k[2];
  s.head_dim = q[3];
  s.head_dim_v = v[3];
  return s;
}

double resolve_scale(const double* scale, int64_t head_dim) {
  if (scale == nullptr) return 1.0 / std::sqrt(static_cast<double>(head_dim));
  require(std::isfinite(*scale), "scale", *scale, "must be a finite number");
  return *scale;
}

}  // namespace sparseattn
