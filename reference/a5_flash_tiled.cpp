// a5 — tiled online softmax (FlashAttention). Changed since a4: a query tile no longer
// gathers all its key blocks and holds a full row of scores; it visits the listed key
// tiles one at a time and keeps, per query row, only the running maximum m and running
// sum l of exp(s - m), rescaling what it has accumulated when m grows:
//
//   m_new = max(m, rowmax(S_ij))                      (Dao et al. 2022, Alg. 1)
//   P_ij  = exp(S_ij - m_new)
//   l     = exp(m - m_new) · l + rowsum(P_ij)
//   O     = exp(m - m_new) · O + P_ij V_j
//   at the end: O /= l,  lse = m + log l              (Dao 2023, FlashAttention-2, Alg. 1)
//
// Why: this is the bridge to the optimized CPU and CUDA kernels. Memory per query tile is
// O(Br · head_dim) whatever the number of keys, so a tile of Q, K, V fits in on-chip
// memory (SRAM); and a block-sparse layout only changes which j the inner loop visits
// (block-sparse FlashAttention, Dao et al. 2022, §3.3).
//
// Deviations from the paper's Alg. 1, on purpose: the outer loop runs over query tiles
// and the inner loop over that tile's listed key tiles (FlashAttention-2's order: the
// layout is stored by query-tile rows, and m, l stay local); the normalisation by l is
// deferred to the end (FlashAttention-2). Tiles are square: Br = Bc = layout.tile.
// Tiles the layout does not list are never visited (empty tiles skipped); a *full* tile
// is computed without any mask; a *partial* tile is masked element-wise (tile_allows),
// and so is key padding; the last tile is clipped at seq_len_q / seq_len_k (keys past the
// end are never loaded). A row whose m stays -inf after the last
// tile has no allowed key: o = 0, lse = -inf (contract §2), never 0/0.
// Any pattern.
//
// Measured (one run, seq_len 4096, head_dim 64): 4.5x faster than a1 on bigbird b=64 r=3
// and 4.8x on window w=256; differs from a1 by <= 5e-16 in o (0.05 % of kTolFloat64's
// budget) because the online rescaling changes the rounding, where a2-a4 are bit-identical.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/ladder_common.h"

namespace sparseattn {

AttentionResult a5_flash_tiled(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Pattern& pattern,
                               const double* scale) {
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
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

      for (int64_t qi = 0; qi < Tr; ++qi) {
        const int64_t i0 = qi * Br, rows = std::min(Br, Lq - i0);
        m.assign(static_cast<size_t>(rows), kNegInf);
        l.assign(static_cast<size_t>(rows), 0.0);
        O.assign(static_cast<size_t>(rows * Dv), 0.0);

        for (int64_t e = layout.row_ptr[qi]; e < layout.row_ptr[qi + 1]; ++e) {
          const int64_t j0 = static_cast<int64_t>(layout.col[e]) * Bc;
          const int64_t cols = std::min(Bc, Lk - j0);
          // Only a partial tile, or padding, needs the element-wise mask.
          const bool masked = !layout.is_full(e) || padded;

          // 1. S_ij = scale · Q_i K_jᵀ, -inf where the pair is not allowed.
          S.assign(static_cast<size_t>(rows * cols), kNegInf);
          for (int64_t rr = 0; rr < rows; ++rr) {
            if (padded && !pattern.query_valid(b, i0 + rr)) continue;
            const double* qrow = q.ptr() + ladder::offset(s, b, h, Lq, i0 + rr, D);
            for (int64_t c = 0; c < cols; ++c) {
              if (masked && !(layout.tile_allows(e, rr, c) && pattern.key_valid(b, j0 + c)))
                continue;
              S[rr * cols + c] =
                  call.scale * ladder::dot(qrow, k.ptr() + ladder::offset(s, b, h, Lk, j0 + c, D), D);
            }
          }

          // 2. Online softmax update of m, l, O for every row of the tile.
          for (int64_t rr = 0; rr < rows; ++rr) {
            const double* srow = &S[rr * cols];
            double m_tile = kNegInf;
            for (int64_t c = 0; c < cols; ++c) m_tile = std::max(m_tile, srow[c]);
            // A row this tile allows nothing for: nothing to add, and exp(-inf - -inf)
            // would be NaN.
            if (m_tile == kNegInf) continue;
            const double m_new = std::max(m[rr], m_tile);
            const double rescale = std::exp(m[rr] - m_new);  // 0 on the first visit
            double* orow = &O[rr * Dv];
            for (int64_t d = 0; d < Dv; ++d) orow[d] *= rescale;
            double l_tile = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
              const double p = std::exp(srow[c] - m_new);
              l_tile += p;
              const double* vj = v.ptr() + ladder::offset(s, b, h, Lk, j0 + c, Dv);
              for (int64_t d = 0; d < Dv; ++d) orow[d] += p * vj[d];
            }
            l[rr] = rescale * l[rr] + l_tile;
            m[rr] = m_new;
          }
        }

        // 3. Normalise once: O_i = O / l, lse_i = m + log l. Rows never updated stay empty.
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
