// a3g — Longformer's global tokens. Changed since a3: the band gets company. A longformer
// pattern (contract §3) is the (dilated) sliding window of a3 plus a set G of global
// token positions, and global attention is symmetric (Beltagy et al. 2020, §3.1):
//   * a global query (its position p is in G) attends EVERY key: a full, dense row;
//   * every other query attends its band keys AND every global key (a few full columns).
// So a row is either dense, or the band's arithmetic progression plus |G| extra keys.
// The only new fact to get right: a global key that already lies inside the band must be
// counted once, not twice (band_allows() tells which), and `causal` cuts global keys
// after the query's position too (contract §3, the same rule the pattern builder uses).
//
// Why: this is how Longformer computes it (§3.2, "we use two sets of projections": the
// band by its banded matmul, global rows and columns as small dense products) and how the
// optimized kernels do it (optimized/cpu/k04_longformer.cpp): the band from band_steps(),
// the |G| global keys from a short list, never a per-row key list of the whole pattern.
// Pattern memory stays O(|G|), not O(nnz).
//
// Serves kinds `window` (G empty: exactly a3) and `longformer`. Key padding removes keys
// and empties padded query rows, as in every step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/ladder_common.h"

namespace sparseattn {

AttentionResult a3g_longformer_global(const Tensor<double>& q, const Tensor<double>& k,
                                      const Tensor<double>& v, const Pattern& pattern,
                                      const double* scale) {
  const PatternKind kind = pattern.spec.kind;
  ladder::require_kind(kind == PatternKind::window || kind == PatternKind::longformer, pattern,
                       "a3g_longformer_global", "window, longformer");
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const BandParams band = pattern.band();
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  // G, sorted and unique (a window pattern has none).
  std::vector<int64_t> global;
  if (kind == PatternKind::longformer) global = pattern.spec.global;
  std::sort(global.begin(), global.end());
  global.erase(std::unique(global.begin(), global.end()), global.end());
  auto is_global = [&](int64_t position) {
    return std::binary_search(global.begin(), global.end(), position);
  };

  AttentionResult r = ladder::empty_result(s);
  std::vector<int64_t> keys;   // the row's keys: band first, then globals outside the band
  std::vector<double> scores;  // their scores; -inf for a padded key

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      for (int64_t i = 0; i < Lq; ++i) {
        if (!pattern.query_valid(b, i)) continue;  // padded query: fully masked row
        const BandSteps st = band_steps(band, i);
        const int64_t p = st.position;
        // Keys this query may ever see: all of them, or those up to its position if causal.
        const int64_t limit = band.causal ? std::min(p + 1, Lk) : Lk;
        if (limit <= 0) continue;

        // 1. The row's keys. A global query: every key below limit (a dense row).
        //    Otherwise: the band j = p + d·t, then each global key the band lacks.
        keys.clear();
        if (p >= 0 && p < Lk && is_global(p)) {
          for (int64_t j = 0; j < limit; ++j) keys.push_back(j);
        } else {
          for (int64_t t = st.t_lo; t <= st.t_hi; ++t) keys.push_back(p + band.dilation * t);
          for (int64_t g : global)
            if (g < limit && !band_allows(band, i, g)) keys.push_back(g);  // count once
        }
        if (keys.empty()) continue;

        // 2. Scores and their max; a padded key scores -inf.
        const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
        scores.resize(keys.size());
        double m = kNegInf;
        for (size_t n = 0; n < keys.size(); ++n) {
          scores[n] = pattern.key_valid(b, keys[n])
                          ? call.scale *
                                ladder::dot(qi, k.ptr() + ladder::offset(s, b, h, Lk, keys[n], D), D)
                          : kNegInf;
          m = std::max(m, scores[n]);
        }
        if (m == kNegInf) continue;  // every key padded

        // 3. lse = m + log sum exp(s - m); o_i = sum exp(s - lse) v_j.
        double l = 0.0;
        for (double x : scores) l += std::exp(x - m);
        const double lse = m + std::log(l);
        r.lse.data[ladder::offset(s, b, h, Lq, i, 1)] = lse;
        double* oi = r.o.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        for (size_t n = 0; n < keys.size(); ++n) {
          const double w = std::exp(scores[n] - lse);
          const double* vj = v.ptr() + ladder::offset(s, b, h, Lk, keys[n], Dv);
          for (int64_t e = 0; e < Dv; ++e) oi[e] += w * vj[e];
        }
      }
    }
  }
  return r;
}

}  // namespace sparseattn
