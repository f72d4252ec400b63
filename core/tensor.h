// A dense, row-major (C order) tensor: the one container every layer passes around.
//
// Deliberately minimal: a shape and a flat std::vector. Kernels index the flat data
// themselves with the layout contract §1 fixes ([batch, num_heads, seq_len, head_dim]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparseattn {

using Shape = std::vector<int64_t>;

// Number of elements of `shape`, checked: every dimension >= 0 and the buffer of
// `element_bytes`-sized elements must fit in this machine's physical memory.
// Throws InvalidArgument naming `what` otherwise (contract §5: sizes that would not fit).
int64_t checked_numel(const Shape& shape, int64_t element_bytes, const std::string& what);

// "[2, 12, 4096, 64]"
std::string shape_text(const Shape& shape);

template <class T>
struct Tensor {
  Shape shape;
  std::vector<T> data;

  Tensor() = default;
  Tensor(Shape s, T fill) : shape(std::move(s)) {
    data.assign(static_cast<size_t>(checked_numel(shape, sizeof(T), "tensor shape")), fill);
  }
  explicit Tensor(Shape s) : Tensor(std::move(s), T{}) {}

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t dim(int64_t axis) const { return shape.at(static_cast<size_t>(axis)); }
  bool empty() const { return shape.empty(); }
  T* ptr() { return data.data(); }
  const T* ptr() const { return data.data(); }
};

// Element-wise conversion (float16 widening happens in npy.h, not here).
template <class To, class From>
Tensor<To> tensor_cast(const Tensor<From>& x) {
  Tensor<To> y;
  y.shape = x.shape;
  y.data.assign(x.data.begin(), x.data.end());
  return y;
}

// Shapes of one attention call, after missing leading dimensions became 1 (contract §1).
struct AttentionShape {
  int64_t batch = 1;
  int64_t num_heads = 1;     // of q (H_q): the pattern's, o's and lse's heads
  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;
  int64_t head_dim = 0;
  int64_t head_dim_v = 0;
  // Of k and v (H_kv); H_q = group() * H_kv (contract §2.7). Last, so that the positional
  // initializers of the six sizes above keep their meaning; attention_shape() sets it.
  int64_t num_kv_heads = 1;
  // Query heads per kv head: query head h reads kv head h / group() (contract §2.7).
  int64_t group() const { return num_heads / num_kv_heads; }
};

// Whether a caller reads k and v with fewer heads than q (grouped-query attention,
// contract §2.7). `equal` is the default: a caller that indexes k by the query head must
// never receive grouped inputs, so it opts in by passing `grouped`.
enum class KvHeads { equal, grouped };

// Reshapes a rank-2/3/4 tensor shape to rank 4 by prepending 1s (contract §1: missing
// leading dimensions mean 1). Throws InvalidArgument naming `what` for rank 0, 1 or > 4.
Shape as_rank4(const Shape& shape, const std::string& what);

// Validates q [B,H,Lq,D], k [B,H_kv,Lk,D], v [B,H_kv,Lk,Dv] (after as_rank4) and returns
// their sizes. H_kv must equal H unless `kv_heads` is `grouped`, where H must be a multiple
// of H_kv (contract §2.7). Throws InvalidArgument naming q/k/v and the mismatching
// dimension. Zero-length sequences and head_dim 0 are rejected (allowed: >= 1).
AttentionShape attention_shape(const Shape& q, const Shape& k, const Shape& v,
                               KvHeads kv_heads = KvHeads::equal);

// 1/sqrt(head_dim) unless `scale` is given; throws InvalidArgument("scale") when the
// given scale is not finite (contract §5).
double resolve_scale(const double* scale, int64_t head_dim);

}  // namespace sparseattn
