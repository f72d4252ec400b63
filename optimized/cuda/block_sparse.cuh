// The block-sparse kernel shared by c07 (every tile full) and c08 (full or partial
// tiles): driven by the layout's tile table, one row of it per thread block.
//
// The grid follows the heavy-first, split-K schedule (tiling.h: ScheduleEntry;
// packed_pattern.h: plan_schedule): entry e names (head, query tile, part of its listed
// key tiles); its per_entry consecutive thread blocks each own up to Br of the tile's rows
// (tiling.h: scheduled_block), so a block never straddles two tiles. Heads are folded
// into grid x, so the heaviest blocks of EVERY head come first. A block walks its part of
// the tiles listed in row_ptr[qt] .. row_ptr[qt+1] (ascending, each once: set semantics
// by construction) and stages each tile's keys in chunks of Bc. A tile whose list is long
// — Longformer's global rows, BigBird's first and last block visit every key tile — is
// split into parts written to a workspace, and split_merge_kernel combines them with the
// lse algebra (tiling.h: merge_lse, merge_weight), in part order: deterministic. With
// sinks (contract §2.9) the parts leave the sink out and the merge adds it exactly once.
// `kBitmasks` selects whether a partial tile's bitmask is read (c06, c08) or every listed
// tile is taken as full (c07, whose launcher checks all_tiles_full()).
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"): c06, c07 and
// c08 are this kernel. History: optimized/cuda/TUNING.md.
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
  const ScheduleEntry se = a.schedule[entry];
  const int64_t h = se.head;
  const HeadView head = a.heads[h];
  const TileBlock tb = scheduled_block(se.tile, sub, head.tile, Core::kBr, a.seq_len_q);
  if (tb.i0 >= tb.i1) return;  // the whole block: past a tile smaller than the largest
  // A split part leaves the sink out: split_merge_kernel adds it once (contract §2.9).
  Core block(a, smem, b, h, Strided{tb.i0, 1, tb.i1 - tb.i0}, /*with_sink=*/se.parts == 1);
  const int64_t q_base = tb.qt * head.tile;
  const EntryRange range = split_range(head.row_ptr[tb.qt], head.row_ptr[tb.qt + 1], se.part, se.parts);
  for (int64_t e = range.begin; e < range.end; ++e) {
    const int64_t k_base = static_cast<int64_t>(head.col[e]) * head.tile;
    const int64_t k_end = min64(k_base + head.tile, a.seq_len_k);
    const bool full = !kBitmasks || head.bits_at[e] < 0;  // no per-pair test on a full tile
    for (int64_t k0 = k_base; k0 < k_end; k0 += Core::kBc)
      block.visit(Strided{k0, 1, min64(Core::kBc, k_end - k0)},
                  [&](int64_t i, int64_t j) { return view_tile_allows(head, e, i - q_base, j - k_base); }, full);
  }
  if (se.parts == 1) {
    block.finish();
  } else {  // this part's rows of its workspace slot
    const int64_t row0 = (b * a.num_slots + se.slot) * a.max_tile;
    block.finish(a.split_o + row0 * a.head_dim_v, a.split_lse + row0, q_base);
  }
}

// Combines the parts of every split (head, query tile): one thread block per group and
// batch element, one thread per (row, column) of the output.
// static: one copy per translation unit (c06, c07, c08 each include this header).
static __global__ void __launch_bounds__(128) split_merge_kernel(AttnArgs a) {
  const SplitGroup g = a.split_groups[blockIdx.x];
  const int64_t b = blockIdx.z;
  const int64_t tile = a.heads[g.head].tile;
  const int64_t i0 = static_cast<int64_t>(g.tile) * tile;
  const int rows = static_cast<int>(min64(tile, a.seq_len_q - i0));
  const int dv = static_cast<int>(a.head_dim_v);
  const int64_t part_stride = a.max_tile;  // rows between two parts' slots
  const float* lse_parts = a.split_lse + (b * a.num_slots + g.slot) * a.max_tile;
  const float* o_parts = a.split_o + (b * a.num_slots + g.slot) * a.max_tile * a.head_dim_v;
  for (int e = threadIdx.x; e < rows * dv; e += blockDim.x) {
    const int r = static_cast<int>(fast_div(a.div_dv, e)), d = e - r * dv;
    float lse = merge_lse(lse_parts + r, g.parts, part_stride);
    // The sink, once per real row (the parts left it out): lse = log(exp(σ) + Σ_p exp(lse_p)),
    // so each part's weight exp(lse_p − lse) carries the sink's share of the denominator; a
    // row whose parts are all empty ends at lse = σ with o = 0 (contract §2.9).
    if (a.sinks != nullptr && a.query_real(b, i0 + r)) {
      const float sigma = a.sinks[g.head];
      const float hi = fmaxf(lse, sigma), lo = fminf(lse, sigma);
      lse = lo == -INFINITY ? hi : hi + log1pf(expf(lo - hi));
    }
    float o = 0.f;
    for (int p = 0; p < g.parts; ++p)
      o += merge_weight(lse_parts[p * part_stride + r], lse) * o_parts[(p * part_stride + r) * a.head_dim_v + d];
    a.o[a.offset(b, g.head, a.seq_len_q, i0 + r, a.head_dim_v) + d] = o;
    if (d == 0) a.lse[(b * a.num_heads + g.head) * a.seq_len_q + i0 + r] = lse;
  }
}

// Grid: x = schedule entries x per_entry (blocks_per_tile of the largest tile), y = 1
// (heads are in the schedule), z = batch; then, if any tile was split, the merge.
template <DType dtype, bool kBitmasks>
void launch_block_sparse(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  const PackedPattern& packed = p.pattern.packed;
  int64_t per_entry = 1;
  for (int64_t tile : packed.head_tile) per_entry = max64(per_entry, blocks_per_tile(tile, Core::kBr));
  const int64_t entries = static_cast<int64_t>(packed.schedule.size());
  require(entries >= 1 && entries <= (int64_t{1} << 31) / per_entry - 1, "seq_len_q", p.shape.seq_len_q,
          "the block-sparse grid holds 1 .. 2^31-1 thread blocks (query tiles x heads x blocks per tile)");
  if (packed.num_slots > 0) {  // the split-K workspace, allocated once per problem
    const auto rows = static_cast<size_t>(p.shape.batch * packed.num_slots * packed.max_tile);
    if (p.split_lse.size() < rows) {
      p.split_o.allocate(rows * static_cast<size_t>(p.shape.head_dim_v));
      p.split_lse.allocate(rows);
    }
  }
  AttnArgs args = p.args();
  args.per_entry = make_fast_div(per_entry);
  launch_flash_grid<Core>(block_sparse_kernel<Core, kBitmasks>, p, args, Grid{entries * per_entry, 1, p.shape.batch},
                          stream);
  if (!packed.split_groups.empty()) {
    const Grid g = attention_grid(static_cast<int64_t>(packed.split_groups.size()), 1, p.shape.batch);
    split_merge_kernel<<<dim3(static_cast<unsigned>(g.x), 1, static_cast<unsigned>(g.z)), 128, 0, stream>>>(args);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace cuda
}  // namespace sparseattn
