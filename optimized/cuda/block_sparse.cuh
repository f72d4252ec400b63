// The block-sparse kernel shared by c07 (every tile full) and c08 (full or partial
// tiles): driven by the layout's tile table, one row of it per thread block.
//
// The grid follows the heavy-first schedule (tiling.h, PackedPattern::schedule): entry e
// of it names (head, query tile); its per_entry consecutive thread blocks each own up to
// Br of the tile's rows (tiling.h: scheduled_block), so a block never straddles two tiles.
// Heads are folded into grid x so that the heaviest tiles of EVERY head come first —
// Longformer's global rows, BigBird's first and last block, which visit every key tile.
// A block walks the tiles listed in row_ptr[qt] .. row_ptr[qt+1] (ascending, each once:
// set semantics by construction) and stages each tile's keys in chunks of Bc.
// `kBitmasks` selects whether a partial tile's bitmask is read (c06, c08) or every listed
// tile is taken as full (c07, whose launcher checks all_tiles_full()).
#pragma once

#include "optimized/cuda/launch.cuh"

namespace sparseattn {
namespace cuda {

template <class Core, bool kBitmasks>
__global__ void __launch_bounds__(Core::kThreads) block_sparse_kernel(AttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t b = blockIdx.z;
  const uint32_t entry = fast_div(a.per_entry, blockIdx.x);
  const uint32_t sub = blockIdx.x - entry * a.per_entry.divisor;
  const int64_t scheduled = a.schedule[entry];
  const int64_t h = schedule_head(scheduled);
  const HeadView head = a.heads[h];
  const TileBlock tb = scheduled_block(schedule_tile(scheduled), sub, head.tile, Core::kBr, a.seq_len_q);
  if (tb.i0 >= tb.i1) return;  // the whole block: past a tile smaller than the largest
  Core block(a, smem, b, h, Strided{tb.i0, 1, tb.i1 - tb.i0});
  const int64_t q_base = tb.qt * head.tile;
  for (int64_t e = head.row_ptr[tb.qt]; e < head.row_ptr[tb.qt + 1]; ++e) {
    const int64_t k_base = static_cast<int64_t>(head.col[e]) * head.tile;
    const int64_t k_end = min64(k_base + head.tile, a.seq_len_k);
    const bool full = !kBitmasks || head.bits_at[e] < 0;  // no per-pair test on a full tile
    for (int64_t k0 = k_base; k0 < k_end; k0 += Core::kBc)
      block.visit(Strided{k0, 1, min64(Core::kBc, k_end - k0)},
                  [&](int64_t i, int64_t j) { return view_tile_allows(head, e, i - q_base, j - k_base); }, full);
  }
  block.finish();
}

// Grid: x = schedule entries x per_entry (blocks_per_tile of the largest tile), y = 1
// (heads are in the schedule), z = batch.
template <DType dtype, bool kBitmasks>
void launch_block_sparse(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  int64_t per_entry = 1;
  for (int64_t tile : p.pattern.packed.head_tile) per_entry = max64(per_entry, blocks_per_tile(tile, Core::kBr));
  AttnArgs args = p.args();
  args.per_entry = make_fast_div(per_entry);
  const int64_t entries = static_cast<int64_t>(p.pattern.packed.schedule.size());
  require(entries >= 1 && entries <= (int64_t{1} << 31) / per_entry - 1, "seq_len_q", p.shape.seq_len_q,
          "the block-sparse grid holds 1 .. 2^31-1 thread blocks (query tiles x heads x blocks per tile)");
  launch_flash_grid<Core>(block_sparse_kernel<Core, kBitmasks>, p, args, Grid{entries * per_entry, 1, p.shape.batch},
                          stream);
}

}  // namespace cuda
}  // namespace sparseattn
