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
// mask of §3.2.3; stable softmax by subtracting the row maximum. The attention of current
// models enters literally, as contract §2.7–§2.9 define it: grouped kv heads (query head h
// reads kv head h / g), the score pipeline (scale, softcap, ALiBi, then the mask) and a
// sink logit in each real row's denominator.
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/validate.h"

namespace sparseattn {

AttentionResult a1_dense_masked(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale_arg) {
  return a1_dense_masked(q, k, v, pattern, scale_arg, ScoreMods{});
}

AttentionResult a1_dense_masked(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale_arg, const ScoreMods& mods) {
  const AttentionShape a =
      validate_attention(q.shape, k.shape, v.shape, pattern, KvHeads::grouped);
  const double scale = resolve_scale(scale_arg, a.head_dim);
  validate_score_mods(mods, a.batch, a.num_heads);
  const int64_t B = a.batch, H = a.num_heads, Hkv = a.num_kv_heads, g = a.group();
  const int64_t Lq = a.seq_len_q, Lk = a.seq_len_k, D = a.head_dim, Dv = a.head_dim_v;
  const double neg_inf = -std::numeric_limits<double>::infinity();

  AttentionResult out{Tensor<double>({B, H, Lq, Dv}, 0.0), Tensor<double>({B, H, Lq}, 0.0)};
  std::vector<double> s(static_cast<size_t>(Lk));  // one row of the score matrix S = q kᵀ
  // contract §3.16: a key listed m times under duplicates = count enters the softmax m
  // times (weight m_ij); 1 for every allowed key of every other pattern.
  std::vector<double> weight(static_cast<size_t>(Lk), 1.0);

  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      // contract §2.7: query head h reads kv head h / g (repeat_interleave), never h mod H_kv.
      const int64_t hk = h / g;
      const double* qh = q.ptr() + (b * H + h) * Lq * D;
      const double* kh = k.ptr() + (b * Hkv + hk) * Lk * D;
      const double* vh = v.ptr() + (b * Hkv + hk) * Lk * Dv;
      double* oh = out.o.ptr() + (b * H + h) * Lq * Dv;
      double* lse = out.lse.ptr() + (b * H + h) * Lq;
      // contract §2.9: the sink is one more logit in every real row's denominator
      // (-inf without sinks, which adds exp(-inf) = 0).
      const double sink = mods.sink(h);
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t position = i + Lk - Lq;  // p, contract §3.1 (ALiBi's distance)
        // s_ij: scale * <q_i, k_j>, softcap, ALiBi (contract §2.8) where allowed, -inf elsewhere.
        double m = neg_inf;
        for (int64_t j = 0; j < Lk; ++j) {
          if (!pattern.allowed(b, h, i, j)) {
            s[j] = neg_inf;
            continue;
          }
          if (pattern.counts_repeats) weight[j] = static_cast<double>(pattern.multiplicity(b, h, i, j));
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qh[i * D + d] * kh[j * D + d];
          s[j] = pipeline_score(scale * dot, mods, b, h, position, j);
          if (s[j] > m) m = s[j];
        }
        // A padded query row does not exist (contract §2.4): no sink, lse = -inf.
        const double row_sink = pattern.query_valid(b, i) ? sink : neg_inf;
        if (row_sink > m) m = row_sink;
        if (m == neg_inf) {  // fully masked row: o_i = 0 (already), lse_i = -inf
          lse[i] = neg_inf;
          continue;
        }
        // lse_i = m + log(exp(sink - m) + sum_j exp(s_ij - m)); o_i = sum_j exp(s_ij - lse_i) v_j.
        // With a sink and no allowed key this is lse_i = sink and o_i = 0 (contract §2.9).
        double l = std::exp(row_sink - m);
        for (int64_t j = 0; j < Lk; ++j) l += weight[j] * std::exp(s[j] - m);
        lse[i] = m + std::log(l);
        for (int64_t j = 0; j < Lk; ++j) {
          if (s[j] == neg_inf) continue;
          const double p = weight[j] * std::exp(s[j] - lse[i]);
          for (int64_t d = 0; d < Dv; ++d) oh[i * Dv + d] += p * vh[j * Dv + d];
        }
      }
    }
  }
  return out;
}

}  // namespace sparseattn
