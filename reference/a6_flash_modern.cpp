// a6 — the tiled online softmax of a5 with the attention of current models: grouped kv
// heads, the score pipeline and learned sinks (contract §2.7–§2.9), float64.
//
// Contract: matches a1_dense_masked (the oracle) within kTolFloat64 (atol 1e-12, rtol
// 1e-12, core/numerics.h) on every element of o and lse, for any pattern, key padding,
// seq_len_q != seq_len_k, k and v with H_kv heads dividing q's H_q, and any ScoreMods
// (softcap, ALiBi slopes [H_q] or [B, H_q], sinks). Serial, no intrinsics: deterministic.
//
// What changed since a5, per contract section:
//   §2.7  query head h reads kv head h / g (repeat_interleave), g = H_q / H_kv: the kv
//         slice is chosen once per head, nothing is repeated or copied;
//   §2.8  each allowed score of a tile goes through the pipeline of core/score_mods.h:
//         s = scale·<q_i, k_j>, then c·tanh(s/c), then − a_{b,h}·|p − j| with p = i + L_k −
//         L_q, and only then the pattern's −inf for the pairs the tile does not allow, so
//         a modifier never touches a disallowed pair;
//   §2.9  the sink is the starting point of every real row's online softmax: m = σ_h and
//         l = exp(σ_h − σ_h) = 1 with O = 0, exactly as if it were one more key of score
//         σ_h and value 0 visited first. A real row no tile reaches then ends with
//         lse = σ_h + log 1 = σ_h and o = 0; a padded query row (Pattern::query_valid false)
//         starts from m = −inf, l = 0 as in a5 and keeps o = 0, lse = −inf.
// Why: the optimized CPU kernels put these three features into their tiles the same way
// (optimized/cpu/flash_tile.h: the pipeline per chunk, the sink as the initial m and l),
// so this is their float64 bridge, as a5 is for plain attention; a1 states the same
// definitions literally, without tiles.
//
// Measured (one run, 2026-12-01, the shared 2-core Zen 5 VM at load 4-5; window w = 128,
// seq_len 1024, head_dim 64, H_q = 8): plain, a6 takes 0.29 s against a5's 0.28 s (the same
// tiles; the sink set-up and query_valid per row cost a few percent); with H_kv = 2 and
// softcap, ALiBi and sinks all set, 0.48 s (std::tanh per score) against the oracle's
// 0.97 s, and it differs from a1 by <= 9e-16 in o and 2.2e-15 in lse (0.07 % of
// kTolFloat64's budget): the online rescaling's rounding, as in a5.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/score_mods.h"
#include "reference/attention.h"
#include "reference/ladder_common.h"

namespace sparseattn {

AttentionResult a6_flash_modern(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale, const ScoreMods& mods) {
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale, KvHeads::grouped);
  const AttentionShape& s = call.s;
  validate_score_mods(mods, s.batch, s.num_heads);
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t Hkv = s.num_kv_heads, g = s.group();
  const double kNegInf = -std::numeric_limits<double>::infinity();

  AttentionResult r = ladder::empty_result(s);
  std::vector<double> m, l, O;  // per row of the query tile: running max, sum, output
  std::vector<double> S;        // one tile of scores [Br, Bc]
  const bool padded = pattern.has_key_padding();

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const HeadLayout& layout = pattern.head(h);
      const int64_t Br = layout.tile, Bc = layout.tile;
      const int64_t Tr = layout.num_q_tiles();
      // contract §2.7: the kv head of query head h, h / g (never h mod H_kv).
      const double* kh = k.ptr() + (b * Hkv + h / g) * Lk * D;
      const double* vh = v.ptr() + (b * Hkv + h / g) * Lk * Dv;
      const double sink = mods.sink(h);  // -inf without sinks: the start of a5

      for (int64_t qi = 0; qi < Tr; ++qi) {
        const int64_t i0 = qi * Br, rows = std::min(Br, Lq - i0);
        // contract §2.9: a real row starts from the sink (m = σ, l = 1, O = 0), a padded
        // query row from nothing (m = -inf, l = 0).
        m.assign(static_cast<size_t>(rows), kNegInf);
        l.assign(static_cast<size_t>(rows), 0.0);
        O.assign(static_cast<size_t>(rows * Dv), 0.0);
        for (int64_t rr = 0; rr < rows; ++rr) {
          if (sink == kNegInf || !pattern.query_valid(b, i0 + rr)) continue;
          m[rr] = sink;
          l[rr] = 1.0;
        }

        for (int64_t e = layout.row_ptr[qi]; e < layout.row_ptr[qi + 1]; ++e) {
          const int64_t j0 = static_cast<int64_t>(layout.col[e]) * Bc;
          const int64_t cols = std::min(Bc, Lk - j0);
          // Only a partial tile, or padding, needs the element-wise mask.
          const bool masked = !layout.is_full(e) || padded;

          // 1. S_ij = the pipeline's score (contract §2.8) where allowed, -inf elsewhere.
          S.assign(static_cast<size_t>(rows * cols), kNegInf);
          for (int64_t rr = 0; rr < rows; ++rr) {
            const int64_t i = i0 + rr;
            if (padded && !pattern.query_valid(b, i)) continue;
            const int64_t position = i + Lk - Lq;  // p, contract §3.1 (ALiBi's distance)
            const double* qrow = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
            for (int64_t c = 0; c < cols; ++c) {
              if (masked && !(layout.tile_allows(e, rr, c) && pattern.key_valid(b, j0 + c)))
                continue;
              const double dot = ladder::dot(qrow, kh + (j0 + c) * D, D);
              S[rr * cols + c] = pipeline_score(call.scale * dot, mods, b, h, position, j0 + c);
            }
          }

          // 2. Online softmax update of m, l, O (a5's step 2, unchanged).
          for (int64_t rr = 0; rr < rows; ++rr) {
            const double* srow = &S[rr * cols];
            double m_tile = kNegInf;
            for (int64_t c = 0; c < cols; ++c) m_tile = std::max(m_tile, srow[c]);
            if (m_tile == kNegInf) continue;  // nothing allowed here (exp(-inf - -inf): NaN)
            const double m_new = std::max(m[rr], m_tile);
            const double rescale = std::exp(m[rr] - m_new);  // 0 on a first visit without sink
            double* orow = &O[rr * Dv];
            for (int64_t d = 0; d < Dv; ++d) orow[d] *= rescale;
            double l_tile = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
              const double p = std::exp(srow[c] - m_new);
              l_tile += p;
              const double* vj = vh + (j0 + c) * Dv;
              for (int64_t d = 0; d < Dv; ++d) orow[d] += p * vj[d];
            }
            l[rr] = rescale * l[rr] + l_tile;
            m[rr] = m_new;
          }
        }

        // 3. Normalise once: o = O / l, lse = m + log l (the sink's share included). A row
        // with m = -inf (no key, no sink, or a padded query) keeps o = 0, lse = -inf.
        for (int64_t rr = 0; rr < rows; ++rr) {
          if (m[rr] == kNegInf) continue;
          const int64_t i = i0 + rr;
          r.lse.data[ladder::offset(s, b, h, Lq, i, 1)] = m[rr] + std::log(l[rr]);
          double* oi = r.o.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
          for (int64_t d = 0; d < Dv; ++d) oi[d] = O[rr * Dv + d] / l[rr];
        }
      }
    }
  }
  return r;
}

}  // namespace sparseattn
