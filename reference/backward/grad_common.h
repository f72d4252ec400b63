// What every step of the backward ladder (b1 .. b3) shares: validating one call (q/k/v
// against the pattern as in the forward ladder, then dout), and the zero gradients every
// step starts from, so a row or key it never touches is already correct (docs/backward.md).
// Internal to reference/: the public contract is reference/backward/backward.h.
#pragma once

#include "reference/backward/backward.h"
#include "reference/ladder_common.h"

namespace sparseattn {
namespace ladder {

// prepare() of the forward ladder, plus validate_dout.
inline Call prepare_grad(const Tensor<double>& q, const Tensor<double>& k,
                         const Tensor<double>& v, const Tensor<double>& dout,
                         const Pattern& pattern, const double* scale) {
  const Call c = prepare(q, k, v, pattern, scale);
  validate_dout(dout.shape, c.s);
  return c;
}

// dq [B,H,Lq,D], dk [B,H,Lk,D], dv [B,H,Lk,Dv], all zero.
inline GradientResult zero_gradients(const AttentionShape& s) {
  GradientResult g;
  g.dq = Tensor<double>({s.batch, s.num_heads, s.seq_len_q, s.head_dim}, 0.0);
  g.dk = Tensor<double>({s.batch, s.num_heads, s.seq_len_k, s.head_dim}, 0.0);
  g.dv = Tensor<double>({s.batch, s.num_heads, s.seq_len_k, s.head_dim_v}, 0.0);
  return g;
}

// y += a · x over d elements.
inline void axpy(double a, const double* x, double* y, int64_t d) {
  for (int64_t e = 0; e < d; ++e) y[e] += a * x[e];
}

}  // namespace ladder
}  // namespace sparseattn
