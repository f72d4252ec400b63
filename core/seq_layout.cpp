#include "core/seq_layout.h"

#include <algorithm>
#include <string>

namespace sparseattn {

namespace {

std::string entry(size_t i) { return "[" + std::to_string(i) + "]"; }

}  // namespace

void validate_cu_seqlens(const std::vector<int64_t>& cu, int64_t total, Field field) {
  require_field(cu.size() >= 2, field, " length", cu.size(),
                "must have B + 1 >= 2 entries (one more than the number of sequences)");
  require_field(cu[0] == 0, field, entry(0), cu[0], "must be 0 (the first sequence starts there)");
  for (size_t i = 1; i < cu.size(); ++i)
    require_field(cu[i] >= cu[i - 1], field, entry(i), cu[i],
                  "must be >= the entry before it (" + std::to_string(cu[i - 1]) +
                      "): cu_seqlens never decrease");
  require_field(cu.back() == total, field, entry(cu.size() - 1), cu.back(),
                "must be the packed tensor's first axis, " + std::to_string(total) +
                    " (the total number of rows)");
}

void validate_varlen(const Varlen& varlen, int64_t total_q, int64_t total_k) {
  validate_cu_seqlens(varlen.cu_seqlens_q, total_q, Field::cu_seqlens_q);
  validate_cu_seqlens(varlen.cu_seqlens_k, total_k, Field::cu_seqlens_k);
  require_field(varlen.cu_seqlens_k.size() == varlen.cu_seqlens_q.size(), Field::cu_seqlens_k,
                " length", varlen.cu_seqlens_k.size(),
                "must be cu_seqlens_q's, " + std::to_string(varlen.cu_seqlens_q.size()) +
                    " (one sequence of keys per sequence of queries)");
}

void validate_kv_cache(const KvCache& cache, int64_t batch) {
  require_field(cache.batch() == batch, Field::cache_seqlens, " length", cache.batch(),
                "must be q's batch, " + std::to_string(batch));
  const int64_t cap = cache.capacity();
  const std::string room = cache.paged() ? "max_pages · page_size" : "the cache's length L_cache";
  for (size_t b = 0; b < cache.cache_seqlens.size(); ++b)
    require_field(cache.cache_seqlens[b] >= 0 && cache.cache_seqlens[b] <= cap,
                  Field::cache_seqlens, entry(b), cache.cache_seqlens[b],
                  "must be in [0, " + std::to_string(cap) + "] (" + room + ")");
  if (!cache.paged()) return;
  require_field(cache.page_size >= 1, Field::block_table, " page_size", cache.page_size,
                "must be >= 1 (the page pools' slots per page)");
  const int64_t rows = cache.max_pages > 0 ? static_cast<int64_t>(cache.block_table.size()) / cache.max_pages : 0;
  require_field(rows == batch, Field::block_table, " shape",
                "[" + std::to_string(rows) + ", " + std::to_string(cache.max_pages) + "]",
                "must have one row per element of q's batch: [" + std::to_string(batch) +
                    ", max_pages]");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t pages_read = (cache.seq_len_k(b) + cache.page_size - 1) / cache.page_size;
    for (int64_t m = 0; m < pages_read; ++m) {
      const int64_t page = cache.block_table[static_cast<size_t>(b * cache.max_pages + m)];
      require_field(page >= 0 && page < cache.num_pages, Field::block_table,
                    "[" + std::to_string(b) + "][" + std::to_string(m) + "]", page,
                    "must be a page of the pools, in [0, " + std::to_string(cache.num_pages) +
                        ") (page " + std::to_string(m) + " holds keys of cache_seqlens[" +
                        std::to_string(b) + "] = " + std::to_string(cache.seq_len_k(b)) + ")");
    }
  }
}

template <class T>
Tensor<T> packed_rows(const Tensor<T>& x, int64_t lo, int64_t hi) {
  const int64_t heads = x.dim(1), d = x.dim(2), len = hi - lo;
  Tensor<T> y({1, heads, len, d});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i)
      std::copy_n(x.ptr() + ((lo + i) * heads + h) * d, d, y.ptr() + (h * len + i) * d);
  return y;
}

template <class T>
void scatter_packed_rows(const Tensor<T>& y, Tensor<T>& x, int64_t lo) {
  const int64_t heads = y.dim(1), len = y.dim(2), d = y.dim(3);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i)
      std::copy_n(y.ptr() + (h * len + i) * d, d, x.ptr() + ((lo + i) * heads + h) * d);
}

template <class T>
void scatter_packed_lse(const Tensor<T>& y, Tensor<T>& x, int64_t lo) {
  const int64_t heads = y.dim(1), len = y.dim(2), total = x.dim(1);
  for (int64_t h = 0; h < heads; ++h)
    std::copy_n(y.ptr() + h * len, len, x.ptr() + h * total + lo);
}

template <class T>
Tensor<T> cache_rows(const Tensor<T>& kv, const KvCache& cache, int64_t b) {
  const int64_t heads = kv.dim(1), d = kv.dim(3), len = cache.seq_len_k(b);
  Tensor<T> y({1, heads, len, d});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = 0; t < len; ++t) {
      const T* src = cache.paged()
                         ? kv.ptr() + ((cache.page(b, t) * heads + h) * cache.page_size +
                                       t % cache.page_size) * d
                         : kv.ptr() + ((b * heads + h) * cache.seq_len_cache + t) * d;
      std::copy_n(src, d, y.ptr() + (h * len + t) * d);
    }
  return y;
}

#define SPARSEATTN_LAYOUT_INSTANCES(T)                                          \
  template Tensor<T> packed_rows(const Tensor<T>&, int64_t, int64_t);           \
  template void scatter_packed_rows(const Tensor<T>&, Tensor<T>&, int64_t);     \
  template void scatter_packed_lse(const Tensor<T>&, Tensor<T>&, int64_t);      \
  template Tensor<T> cache_rows(const Tensor<T>&, const KvCache&, int64_t);
SPARSEATTN_LAYOUT_INSTANCES(double)
SPARSEATTN_LAYOUT_INSTANCES(float)
#undef SPARSEATTN_LAYOUT_INSTANCES

}  // namespace sparseattn
