// b1 — the backward pass of a1_dense_masked in float64: THE GRADIENT ORACLE (contract §7).
//
// What changed since the forward oracle a1: nothing in how the pattern enters — one
// Pattern::allowed question per (i, j), disallowed scores -inf — but each query row now
// also propagates dO back. Per row i, with the full masked probability row p_i (p_ij = 0
// where not allowed):
//
//   dv_j  += p_ij · do_i                              (dV = Pᵀ dO)
//   dp_ij  = <do_i, v_j>                              (dP = dO Vᵀ)
//   ds_ij  = p_ij · (dp_ij − Σ_k p_ik dp_ik)          (the softmax Jacobian)
//   dq_i   = scale · Σ_j ds_ij k_j                    (dQ = scale · dS K)
//   dk_j  += scale · ds_ij q_i                        (dK = scale · dSᵀ Q)
//
// Why it is the oracle: it is the chain rule applied to a1 line by line, with the softmax
// Jacobian written as its definition (Σ_k p_ik dp_ik over the row, not the saved-output
// shortcut <do_i, o_i> that b3 and every fast kernel use), and it is itself checked
// against central finite differences of a1 (tests/reference/backward_test.cpp).
//
// A fully masked row (maximum score -inf) is skipped: its o is the constant 0, so it
// contributes nothing and dq_i stays 0 (never exp(-inf − -inf) = NaN).
// Source: docs/backward.md; FlashAttention-2 (Dao 2023), Alg. 2 states the same formulas.
#include <cmath>
#include <limits>
#include <vector>

#include "reference/backward/grad_common.h"

namespace sparseattn {

void validate_dout(const Shape& dout, const AttentionShape& s) {
  const Shape want = {s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};
  Shape got = dout;
  while (got.size() < 4 && !got.empty()) got.insert(got.begin(), 1);
  require(got == want, "dout shape", shape_text(dout),
          "must be " + shape_text(want) + " (o's shape; leading 1s may be omitted)");
}

GradientResult b1_dense_masked_grad(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Tensor<double>& dout,
                                    const Pattern& pattern, const double* scale) {
  const ladder::Call call = ladder::prepare_grad(q, k, v, dout, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const double neg_inf = -std::numeric_limits<double>::infinity();

  GradientResult g = ladder::zero_gradients(s);
  std::vector<double> p(static_cast<size_t>(Lk));   // one row of P
  std::vector<double> dp(static_cast<size_t>(Lk));  // one row of dP

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
        const double* doi = dout.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        // 1. The masked scaled scores and their maximum (a1, step for step).
        double m = neg_inf;
        for (int64_t j = 0; j < Lk; ++j) {
          p[j] = neg_inf;
          if (!pattern.allowed(b, h, i, j)) continue;
          p[j] = call.scale * ladder::dot(qi, k.ptr() + ladder::offset(s, b, h, Lk, j, D), D);
          if (p[j] > m) m = p[j];
        }
        if (m == neg_inf) continue;  // fully masked row: no gradient flows through it
        // 2. p_ij = softmax of the row (exactly 0 where masked).
        double l = 0.0;
        for (int64_t j = 0; j < Lk; ++j) l += std::exp(p[j] - m);
        for (int64_t j = 0; j < Lk; ++j) p[j] = std::exp(p[j] - m) / l;
        // 3. dP row and the Jacobian's row sum Σ_k p_ik dp_ik.
        double row_sum = 0.0;
        for (int64_t j = 0; j < Lk; ++j) {
          dp[j] = p[j] == 0.0 ? 0.0
                              : ladder::dot(doi, v.ptr() + ladder::offset(s, b, h, Lk, j, Dv), Dv);
          row_sum += p[j] * dp[j];
        }
        // 4. dV, dS, dQ, dK.
        double* dqi = g.dq.ptr() + ladder::offset(s, b, h, Lq, i, D);
        for (int64_t j = 0; j < Lk; ++j) {
          if (p[j] == 0.0) continue;
          ladder::axpy(p[j], doi, g.dv.ptr() + ladder::offset(s, b, h, Lk, j, Dv), Dv);
          const double ds = p[j] * (dp[j] - row_sum);
          ladder::axpy(call.scale * ds, k.ptr() + ladder::offset(s, b, h, Lk, j, D), dqi, D);
          ladder::axpy(call.scale * ds, qi, g.dk.ptr() + ladder::offset(s, b, h, Lk, j, D), D);
        }
      }
    }
  }
  return g;
}

}  // namespace sparseattn
