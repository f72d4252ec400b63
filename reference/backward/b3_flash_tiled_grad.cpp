// b3 — tiled FlashAttention-2 backward over the canonical layout (Dao 2023, Alg. 2).
//
// What changed since b2:
//   1. Nothing is normalised again. The forward pass saved o and lse; P is recomputed tile
//      by tile as p_ij = exp(s_ij − lse_i) (Alg. 2, line 11), so no row needs its maximum
//      or its sum a second time and no row of scores is ever held.
//   2. The Jacobian's row sum is not a sum over the row's keys any more: it is
//      D_i = rowsum(dO_i ∘ O_i) = <do_i, o_i> (Alg. 2, line 4), computed once per row from
//      the saved output before any tile is visited (Σ_j p_ij dp_ij = <do_i, Σ_j p_ij v_j>).
//   3. The loops are turned around: the OUTER loop runs over key tiles and, for each, over
//      the query tiles that list it (the layout's transpose, ColumnLayout), so a key tile's
//      dk and dv are finished in one visit — FlashAttention-2's order, which lets one
//      worker own a key tile's dk/dv; dq_i collects a contribution from every key tile
//      (the paper adds it to HBM with atomics; here, serially, it is a plain +=).
// Per tile (query tile qt, key tile kt), for every allowed (i, j) — full tiles unmasked,
// partial tiles by bitmask, key padding element-wise, as in a5:
//   s = scale <q_i, k_j>,  p = exp(s − lse_i),  dv_j += p do_i,  dp = <do_i, v_j>,
//   ds = p (dp − D_i),  dq_i += scale ds k_j,  dk_j += scale ds q_i.
// A row with lse_i = -inf (fully masked) is skipped: it contributes nothing, dq_i = 0.
//
// Why: the same reason as a5 in the forward ladder — memory per step is one tile, and a
// block-sparse layout only changes which tiles the loops visit. This is the bridge to the
// optimized CPU and CUDA backward kernels, which follow this loop order.
// Differs from b1 only in rounding: D from o instead of Σ p dp, p from the saved lse, and
// dq summed over key tiles (measured: within kTolFloat64, tests/reference/backward_test.cpp).
// Any pattern.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/backward/grad_common.h"
#include "pattern/column_layout.h"

namespace sparseattn {

GradientResult b3_flash_tiled_grad(const Tensor<double>& q, const Tensor<double>& k,
                                   const Tensor<double>& v, const Tensor<double>& o,
                                   const Tensor<double>& lse, const Tensor<double>& dout,
                                   const Pattern& pattern, const double* scale) {
  const ladder::Call call = ladder::prepare_grad(q, k, v, dout, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  validate_dout(o.shape, s);  // o has dout's shape
  require(lse.numel() == s.batch * s.num_heads * Lq, "lse shape", shape_text(lse.shape),
          "must be [" + std::to_string(s.batch) + ", " + std::to_string(s.num_heads) + ", " +
              std::to_string(Lq) + "] (the forward pass's lse)");
  const double kNegInf = -std::numeric_limits<double>::infinity();
  const bool padded = pattern.has_key_padding();

  GradientResult g = ladder::zero_gradients(s);
  std::vector<double> Drow(static_cast<size_t>(Lq));  // D_i of one (batch, head)

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const HeadLayout& layout = pattern.head(h);
      const ColumnLayout columns = column_layout(layout);
      const int64_t T = layout.tile;
      const double* lse_h = lse.ptr() + ladder::offset(s, b, h, Lq, 0, 1);

      // 1. D_i = <do_i, o_i> for every row (Alg. 2, line 4).
      for (int64_t i = 0; i < Lq; ++i)
        Drow[i] = ladder::dot(dout.ptr() + ladder::offset(s, b, h, Lq, i, Dv),
                              o.ptr() + ladder::offset(s, b, h, Lq, i, Dv), Dv);

      // 2. Outer loop: key tiles; inner loop: the query tiles that list this key tile.
      for (int64_t kt = 0; kt < layout.num_k_tiles(); ++kt) {
        const int64_t j0 = kt * T, cols = std::min(T, Lk - j0);
        for (int64_t x = columns.col_ptr[kt]; x < columns.col_ptr[kt + 1]; ++x) {
          const int64_t e = columns.entry[x];
          const int64_t i0 = static_cast<int64_t>(columns.row[x]) * T;
          const int64_t rows = std::min(T, Lq - i0);
          for (int64_t rr = 0; rr < rows; ++rr) {
            const int64_t i = i0 + rr;
            // A fully masked row (padded queries included) carries no gradient.
            if (lse_h[i] == kNegInf || (padded && !pattern.query_valid(b, i))) continue;
            const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
            const double* doi = dout.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
            double* dqi = g.dq.ptr() + ladder::offset(s, b, h, Lq, i, D);
            for (int64_t c = 0; c < cols; ++c) {
              const int64_t j = j0 + c;
              if (!layout.tile_allows(e, rr, c) || (padded && !pattern.key_valid(b, j))) continue;
              const double* kj = k.ptr() + ladder::offset(s, b, h, Lk, j, D);
              const double* vj = v.ptr() + ladder::offset(s, b, h, Lk, j, Dv);
              const double p = std::exp(call.scale * ladder::dot(qi, kj, D) - lse_h[i]);
              ladder::axpy(p, doi, g.dv.ptr() + ladder::offset(s, b, h, Lk, j, Dv), Dv);
              const double ds = p * (ladder::dot(doi, vj, Dv) - Drow[i]);
              ladder::axpy(call.scale * ds, kj, dqi, D);
              ladder::axpy(call.scale * ds, qi, g.dk.ptr() + ladder::offset(s, b, h, Lk, j, D), D);
            }
          }
        }
      }
    }
  }
  return g;
}

}  // namespace sparseattn
