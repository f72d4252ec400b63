// a3 — the band. Changed since a2: no key list at all. For a sliding (possibly dilated,
// possibly causal) window the allowed keys of query i are an arithmetic progression,
//   j = p + dilation·t,  t_lo <= t <= t_hi,   p = i + seq_len_k - seq_len_q,
// so the row computes its keys from band_steps() (pattern/band.h, the same
// arithmetic the pattern builder and the CUDA window kernels use) instead of reading them.
//
// Why: this is how window kernels are written (Longformer's sliding-chunks and dilated
// "banded" matmul, Beltagy et al. 2020, §3.2 and Fig. 2b/2c; FlashAttention's
// window_size): memory for the pattern drops from O(nnz) to O(1), and a kernel knows its
// key range before it loads anything. The only new fact to get right is the boundary
// clipping (0 <= j < seq_len_k) and the bottom-right alignment when seq_len_q != seq_len_k,
// both done once in band_steps().
//
// Serves pattern kind `window` only (longformer and random add keys outside the band), the
// symmetric window and the (left, right) pair alike (contract §3.3: band_steps() reads both).
// Key padding removes keys and empties padded query rows, as in every step.
//
// Measured (one run, seq_len 4096, window 256, head_dim 64): about as fast as a2 (1.2x
// in that run, within noise): the work is the same nnz dot products; what a3 saves is
// the key list's memory, which matters on a GPU, not here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/ladder_common.h"

namespace sparseattn {

AttentionResult a3_window_band(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Pattern& pattern,
                               const double* scale) {
  ladder::require_kind(pattern.spec.kind == PatternKind::window, pattern, "a3_window_band",
                       "window");
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const BandParams band = pattern.band();

  AttentionResult r = ladder::empty_result(s);
  std::vector<double> scores;  // s_t for t in [t_lo, t_hi]; -inf for a padded key

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      for (int64_t i = 0; i < Lq; ++i) {
        if (!pattern.query_valid(b, i)) continue;  // padded query: fully masked row
        const BandSteps st = band_steps(band, i);
        if (st.count() == 0) continue;

        // 1. Scores of the band's keys j = p + d·t; a padded key scores -inf.
        const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
        scores.assign(static_cast<size_t>(st.count()), 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t t = st.t_lo; t <= st.t_hi; ++t) {
          const int64_t j = st.position + band.dilation * t;
          double& x = scores[t - st.t_lo];
          x = pattern.key_valid(b, j)
                  ? call.scale * ladder::dot(qi, k.ptr() + ladder::offset(s, b, h, Lk, j, D), D)
                  : -std::numeric_limits<double>::infinity();
          m = std::max(m, x);
        }
        if (m == -std::numeric_limits<double>::infinity()) continue;  // every key padded

        // 2. lse = m + log sum exp(s - m).
        double l = 0.0;
        for (double x : scores) l += std::exp(x - m);
        const double lse = m + std::log(l);
        r.lse.data[ladder::offset(s, b, h, Lq, i, 1)] = lse;
        // 3. o_i = sum_t exp(s_t - lse) v_{p + d·t}; a padded key has weight exp(-inf) = 0.
        double* oi = r.o.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        for (int64_t t = st.t_lo; t <= st.t_hi; ++t) {
          const double p = std::exp(scores[t - st.t_lo] - lse);
          const double* vj =
              v.ptr() + ladder::offset(s, b, h, Lk, st.position + band.dilation * t, Dv);
          for (int64_t e = 0; e < Dv; ++e) oi[e] += p * vj[e];
        }
      }
    }
  }
  return r;
}

}  // namespace sparseattn
