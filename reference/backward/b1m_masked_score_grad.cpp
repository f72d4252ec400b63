// b1m — the gradient of attention with a finite masked score (contract §1.6, §7.6), beside
// the gradient oracle b1 whose chain rule it reuses.
//
// Contract: the derivative of masked_score_attention (reference/masked_score.h: every
// masked score IS `value`, masked_fill semantics); float64, serial, no intrinsics; checked
// against central finite differences of that forward (|fd − grad| ≤ 1e-6 · max |grad| per
// tensor, tests/reference/compat_grad_test.cpp) and judged at kTolFloat64 when it judges
// others (`check --dout --masked-score VALUE`). Any pattern, key padding, seq_len_q ≠
// seq_len_k.
//
// What changed since b1: a masked pair no longer leaves the row. Its score is a constant,
// so it keeps a probability p_ij = exp(value − lse_i): it takes its share of dv_j and of
// the row sum D_i = Σ_j p_ij dp_ij like any key, and only its ds_ij has no path back to
// q_i or k_j. A row with no allowed key is no longer "no gradient": o_i = mean_j v_j, so
// dv_j += do_i / L_k for every key, while dq_i stays 0 (nothing in the row depends on q).
//
// Measured: docs/backward.md, "Finite differences under the other conventions".
#include <vector>

#include "reference/backward/compat_grad.h"
#include "reference/backward/grad_common.h"

namespace sparseattn {

GradientResult masked_score_grad(const Tensor<double>& q, const Tensor<double>& k,
                                 const Tensor<double>& v, const Tensor<double>& dout,
                                 const Pattern& pattern, const double* scale, double value) {
  const ladder::Call call = ladder::prepare_grad(q, k, v, dout, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t H = s.num_heads, Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim,
                Dv = s.head_dim_v;
  GradientResult g = ladder::zero_gradients(s);
  std::vector<ladder::SoftmaxTerm> terms(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t qrow0 = (b * H + h) * Lq, krow0 = (b * H + h) * Lk;
      for (int64_t i = 0; i < Lq; ++i) {
        // Every key is a summand; only the allowed ones have a score that moves.
        for (int64_t j = 0; j < Lk; ++j) terms[static_cast<size_t>(j)] = {j, pattern.allowed(b, h, i, j)};
        ladder::softmax_row_grad(terms, value, call.scale, q.ptr() + (qrow0 + i) * D,
                                 k.ptr() + krow0 * D, v.ptr() + krow0 * Dv,
                                 dout.ptr() + (qrow0 + i) * Dv, D, Dv,
                                 g.dq.ptr() + (qrow0 + i) * D, g.dk.ptr() + krow0 * D,
                                 g.dv.ptr() + krow0 * Dv);
      }
    }
  return g;
}

}  // namespace sparseattn
