#include "optimized/cuda/varlen_plan.h"

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace sparseattn {
namespace cuda {

VarlenPlan plan_varlen(const PatternSpec& spec, const Varlen& varlen, int64_t tile_rows) {
  require(tile_rows >= 1 && tile_rows <= kVarlenTileRows, "tile_rows", tile_rows, "must be in [1, 32]");
  const int64_t batch = varlen.num_sequences();
  VarlenPlan plan;
  plan.rows.assign(static_cast<size_t>(varlen.total_q()), DecodeRowKeys{});
  plan.tile_start.assign(static_cast<size_t>(batch + 1), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t lq = varlen.seq_len_q(b), lk = varlen.seq_len_k(b);
    const int64_t q0 = varlen.cu_seqlens_q[static_cast<size_t>(b)];
    require(lq <= INT32_MAX, "cu_seqlens_q", lq, "a sequence of the CUDA packed-batch kernel holds at most 2^31-1 queries");
    require(lk <= INT32_MAX, "cu_seqlens_k", lk, "a sequence of the CUDA packed-batch kernel holds at most 2^31-1 keys");
    // The band of the sequence's own lengths, once (decode_row_keys reads it for windows).
    const BandParams band = spec.kind == PatternKind::window && lk > 0 ? band_of(spec, lq, lk) : BandParams{};
    for (int64_t i0 = 0; i0 < lq; i0 += tile_rows) {
      VarlenTile t;
      t.b = static_cast<int32_t>(b);
      t.i0 = static_cast<int32_t>(i0);
      t.rows = static_cast<int32_t>(std::min(tile_rows, lq - i0));
      int64_t lo = lk, hi = -1;  // the union of the tile's rows' keys
      for (int64_t i = i0; i < i0 + t.rows; ++i) {
        const DecodeRowKeys r = decode_row_keys(spec, band, lq, lk, i);
        plan.rows[static_cast<size_t>(q0 + i)] = r;
        if (r.lo > r.hi) continue;
        lo = std::min(lo, r.lo);
        hi = std::max(hi, r.hi);
      }
      t.j0 = hi >= lo ? lo : 0;
      t.j1 = hi >= lo ? hi + 1 : 0;
      plan.tiles.push_back(t);
    }
    require(plan.tiles.size() <= static_cast<size_t>(INT32_MAX), "cu_seqlens_q", varlen.total_q(),
            "the CUDA packed-batch grid holds at most 2^31-1 tiles of 32 queries");
    plan.tile_start[static_cast<size_t>(b + 1)] = static_cast<int32_t>(plan.tiles.size());
  }
  return plan;
}

Varlen plain_varlen(int64_t batch, int64_t seq_len_q, int64_t seq_len_k) {
  Varlen v;
  for (int64_t b = 0; b <= batch; ++b) {
    v.cu_seqlens_q.push_back(b * seq_len_q);
    v.cu_seqlens_k.push_back(b * seq_len_k);
  }
  return v;
}

bool varlen_serves(const Pattern& pattern) {
  return decode_row_rule_covers(pattern.spec) && !pattern.has_key_padding();
}

}  // namespace cuda
}  // namespace sparseattn
