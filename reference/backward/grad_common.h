// What every step of the backward ladder (b1 .. b3) shares: validating one call (q/k/v
// against the pattern as in the forward ladder, then dout), and the zero gradients every
// step starts from, so a row or key it never touches is already correct (docs/backward.md).
// Internal to reference/: the public contract is reference/backward/backward.h.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

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

// One term of a query row's softmax under the conventions of reference/backward/
// compat_grad.h: the key j, and whether its score is scale·<q_i, k_j> (scored) or a
// constant (a finite masked score, which no q or k moves).
struct SoftmaxTerm {
  int64_t key;
  bool scored;
};

// One query row's whole contribution to the gradients, the chain rule through one
// softmax row whose summands are `terms` (a key listed twice is two summands):
//   s_t  = scored ? scale · <q_i, k_j(t)> : constant
//   p_t  = exp(s_t − max_t s_t) / Σ_t' exp(s_t' − max_t s_t)
//   dv_j(t) += p_t do_i;   dp_t = <do_i, v_j(t)>;   ds_t = p_t (dp_t − Σ_t' p_t' dp_t')
//   scored terms only: dq_i += scale · ds_t k_j(t),   dk_j(t) += scale · ds_t q_i
// No terms (a fully masked row): nothing, exactly. Pointers: qi, dqi [D]; doi [Dv]; k, dk
// at row 0 of this (batch, head)'s [L_k, D]; v, dv at row 0 of its [L_k, Dv].
inline void softmax_row_grad(const std::vector<SoftmaxTerm>& terms, double constant, double scale,
                             const double* qi, const double* k, const double* v,
                             const double* doi, int64_t D, int64_t Dv, double* dqi, double* dk,
                             double* dv) {
  if (terms.empty()) return;
  const size_t n = terms.size();
  std::vector<double> p(n), dp(n);
  double m = -std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < n; ++t) {
    p[t] = terms[t].scored ? scale * dot(qi, k + terms[t].key * D, D) : constant;
    if (p[t] > m) m = p[t];
  }
  double l = 0.0;
  for (size_t t = 0; t < n; ++t) l += std::exp(p[t] - m);
  double row_sum = 0.0;  // D_i = Σ_t p_t dp_t (the softmax Jacobian's row term)
  for (size_t t = 0; t < n; ++t) {
    p[t] = std::exp(p[t] - m) / l;
    dp[t] = dot(doi, v + terms[t].key * Dv, Dv);
    row_sum += p[t] * dp[t];
  }
  for (size_t t = 0; t < n; ++t) {
    const int64_t j = terms[t].key;
    axpy(p[t], doi, dv + j * Dv, Dv);
    if (!terms[t].scored) continue;  // a constant score: no path back to q_i or k_j
    const double ds = p[t] * (dp[t] - row_sum);
    axpy(scale * ds, k + j * D, dqi, D);
    axpy(scale * ds, qi, dk + j * D, D);
  }
}

}  // namespace ladder
}  // namespace sparseattn
