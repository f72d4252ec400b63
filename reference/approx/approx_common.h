// What the two approximations share: the pattern they serve, one (batch, head) slice of
// q/k as its own matrix, and row-major matrix helpers. Internal to reference/approx/.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "reference/ladder_common.h"
#include "pattern/pattern.h"

namespace sparseattn {
namespace approx {

// Both approximate softmax over ALL keys: no mask enters their factorizations. So they
// serve the dense, non-causal pattern without key padding, and refuse the rest by name
// rather than silently ignore a mask.
inline bool serves_dense(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::dense && !pattern.spec.causal &&
         !pattern.has_key_padding();
}

inline void require_dense(const Pattern& pattern, const char* method) {
  ladder::require_kind(serves_dense(pattern), pattern, method,
                       "dense without causal and without key padding (an approximation of "
                       "full softmax attention)");
}

// Rows [rows, width] of (b, h) of a [B, H, rows, width] tensor, times `factor`.
inline Tensor<double> scaled_rows(const Tensor<double>& x, const AttentionShape& s, int64_t b,
                                  int64_t h, int64_t rows, int64_t width, double factor) {
  Tensor<double> out({rows, width}, 0.0);
  const double* src = x.ptr() + ladder::offset(s, b, h, rows, 0, width);
  for (int64_t i = 0; i < rows * width; ++i) out.data[i] = factor * src[i];
  return out;
}

// A [n, p] · B [p, m] -> [n, m], serial, in order.
inline Tensor<double> matmul(const Tensor<double>& A, const Tensor<double>& B) {
  const int64_t n = A.dim(0), p = A.dim(1), m = B.dim(1);
  Tensor<double> C({n, m}, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < p; ++t) {
      const double a = A.data[i * p + t];
      for (int64_t j = 0; j < m; ++j) C.data[i * m + j] += a * B.data[t * m + j];
    }
  return C;
}

}  // namespace approx
}  // namespace sparseattn
