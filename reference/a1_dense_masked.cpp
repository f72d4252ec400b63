// a1 — dense masked attention in float64: THE ORACLE (contract §4).
//
// What changed since a0: the pattern enters as a mask on the full score matrix. A
// disallowed score is -inf, not a large negative constant, so it contributes exactly
// exp(-inf) = 0 and a row with no allowed key is detected (its maximum is -inf) and
// returns o = 0, lse = -inf instead of the 0/0 = NaN a naive softmax would produce.
//
// Why it is the oracle: it asks the pattern one question per (i, j) — Pattern::allowed —
// and does nothing clever. Every other implementation in this project, including the
// other reference steps, is checked against it.
//
// Source: Vaswani et al. 2017, eq. 1 (scaled dot-product attention) with the additive
// mask of §3.2.3; stable softmax by subtracting the row maximum.
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/validate.h"

namespace sparseattn {

AttentionResult a1_dense_masked(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale_arg) {
  const AttentionShape a = validate_attention(q.shape, k.shape, v.shape, pattern);
  const double scale = resolve_scale(scale_arg, a.head_dim);
  const int64_t B = a.batch, H = a.num_heads, Lq = a.seq_len_q, Lk = a.seq_len_k;
  const int64_t D = a.head_dim, Dv = a.head_dim_v;
  const double neg_inf = -std::numeric_limits<double>::infinity();

  AttentionResult out{Tensor<double>({B, H, Lq, Dv}, 0.0), Tensor<double>({B, H, Lq}, 0.0)};
  std::vector<double> s(static_cast<size_t>(Lk));  // one row of the score matrix S = q kᵀ

  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const double* qh = q.ptr() + (b * H + h) * Lq * D;
      const double* kh = k.ptr() + (b * H + h) * Lk * D;
      const double* vh = v.ptr() + (b * H + h) * Lk * Dv;
      double* oh = out.o.ptr() + (b * H + h) * Lq * Dv;
      double* lse = out.lse.ptr() + (b * H + h) * Lq;
      for (int64_t i = 0; i < Lq; ++i) {
        // s_ij = scale * <q_i, k_j> where allowed, -inf elsewhere.
        double m = neg_inf;
        for (int64_t j = 0; j < Lk; ++j) {
          if (!pattern.allowed(b, h, i, j)) {
            s[j] = neg_inf;
            continue;
          }
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qh[i * D + d] * kh[j * D + d];
          s[j] = scale * dot;
          if (s[j] > m) m = s[j];
        }
        if (m == neg_inf) {  // fully masked row: o_i = 0 (already), lse_i = -inf
          lse[i] = neg_inf;
          continue;
        }
        // lse_i = m + log(sum_j exp(s_ij - m)); o_i = sum_j exp(s_ij - lse_i) v_j.
        double l = 0.0;
        for (int64_t j = 0; j < Lk; ++j) l += std::exp(s[j] - m);
        lse[i] = m + std::log(l);
        for (int64_t j = 0; j < Lk; ++j) {
          if (s[j] == neg_inf) continue;
          const double p = std::exp(s[j] - lse[i]);
          for (int64_t d = 0; d < Dv; ++d) oh[i * Dv + d] += p * vh[j * Dv + d];
        }
      }
    }
  }
  return out;
}

}  // namespace sparseattn
