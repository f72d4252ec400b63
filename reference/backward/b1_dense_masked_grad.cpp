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
// The attention of current models (contract §7.7) enters as in a1: kv head h / g, the
// softcap's chain rule 1 − tanh²(s/c) on each score's derivative, ALiBi a constant, and the
// sink one more column of zero value whose logit gets dσ = −p_sink · <dO_i, o_i> per row.
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
  return b1_dense_masked_grad(q, k, v, dout, pattern, scale, ScoreMods{});
}

GradientResult b1_dense_masked_grad(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Tensor<double>& dout,
                                    const Pattern& pattern, const double* scale,
                                    const ScoreMods& mods) {
  const ladder::Call call =
      ladder::prepare(q, k, v, pattern, scale, KvHeads::grouped);
  const AttentionShape& s = call.s;
  validate_dout(dout.shape, s);
  validate_score_mods(mods, s.batch, s.num_heads);
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t H = s.num_heads, Hkv = s.num_kv_heads, g_size = s.group();
  const double neg_inf = -std::numeric_limits<double>::infinity();

  GradientResult g;
  g.dq = Tensor<double>({s.batch, H, Lq, D}, 0.0);
  g.dk = Tensor<double>({s.batch, Hkv, Lk, D}, 0.0);
  g.dv = Tensor<double>({s.batch, Hkv, Lk, Dv}, 0.0);
  if (mods.has_sinks()) g.dsinks = Tensor<double>({H}, 0.0);
  std::vector<double> p(static_cast<size_t>(Lk));     // one row of P
  std::vector<double> dp(static_cast<size_t>(Lk));    // one row of dP
  std::vector<double> slope(static_cast<size_t>(Lk)); // d s_ij / d raw_ij (softcap's 1 - tanh²)
  // contract §7.9: m_ij, the times key j enters row i's softmax (1 unless counted repeats).
  std::vector<double> weight(static_cast<size_t>(Lk), 1.0);

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      // contract §2.7: query head h reads (and its gradient flows to) kv head h / g.
      const int64_t bk = b * Hkv + h / g_size;
      const double* kh = k.ptr() + bk * Lk * D;
      const double* vh = v.ptr() + bk * Lk * Dv;
      double* dkh = g.dk.ptr() + bk * Lk * D;
      double* dvh = g.dv.ptr() + bk * Lk * Dv;
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qi = q.ptr() + ((b * H + h) * Lq + i) * D;
        const double* doi = dout.ptr() + ((b * H + h) * Lq + i) * Dv;
        const int64_t position = i + Lk - Lq;
        // 1. The masked scores of a1's pipeline (scale, softcap, ALiBi) and their maximum.
        double m = neg_inf;
        for (int64_t j = 0; j < Lk; ++j) {
          p[j] = neg_inf;
          if (!pattern.allowed(b, h, i, j)) continue;
          if (pattern.counts_repeats) weight[j] = static_cast<double>(pattern.multiplicity(b, h, i, j));
          const double raw = call.scale * ladder::dot(qi, kh + j * D, D);
          slope[j] = 1.0;
          if (mods.softcap) {
            const double t = std::tanh(raw / *mods.softcap);
            slope[j] = 1.0 - t * t;
          }
          p[j] = pipeline_score(raw, mods, b, h, position, j);
          if (p[j] > m) m = p[j];
        }
        // A row with no allowed key has o = 0 (with a sink too: contract §2.9): no gradient
        // flows through it, and its sink's share times <dO, o> = 0 adds nothing to dσ.
        if (m == neg_inf) continue;
        // 2. p_ij = softmax of the row, the sink a column of zero value in its denominator.
        const double sink = pattern.query_valid(b, i) ? mods.sink(h) : neg_inf;
        if (sink > m) m = sink;
        double l = std::exp(sink - m);
        for (int64_t j = 0; j < Lk; ++j) l += weight[j] * std::exp(p[j] - m);
        for (int64_t j = 0; j < Lk; ++j) p[j] = weight[j] * std::exp(p[j] - m) / l;
        // 3. dP row and the Jacobian's row sum Σ_k p_ik dp_ik (= <dO_i, o_i>; the sink's
        //    dp is 0).
        double row_sum = 0.0;
        for (int64_t j = 0; j < Lk; ++j) {
          dp[j] = p[j] == 0.0 ? 0.0 : ladder::dot(doi, vh + j * Dv, Dv);
          row_sum += p[j] * dp[j];
        }
        // dσ_h: the sink's column of the Jacobian, p_sink · (0 − row_sum).
        if (mods.has_sinks()) g.dsinks.data[static_cast<size_t>(h)] -= std::exp(sink - m) / l * row_sum;
        // 4. dV, dS (through the softcap), dQ, dK.
        double* dqi = g.dq.ptr() + ((b * H + h) * Lq + i) * D;
        for (int64_t j = 0; j < Lk; ++j) {
          if (p[j] == 0.0) continue;
          ladder::axpy(p[j], doi, dvh + j * Dv, Dv);
          const double ds = p[j] * (dp[j] - row_sum) * slope[j];
          ladder::axpy(call.scale * ds, kh + j * D, dqi, D);
          ladder::axpy(call.scale * ds, qi, dkh + j * D, D);
        }
      }
    }
  }
  return g;
}

}  // namespace sparseattn
