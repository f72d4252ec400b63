// The block-sparse kernel shared by c07 (every tile full) and c08 (full or partial
// tiles): driven by the layout's tile table, one row of it per thread block.
//
// Query tile qt of head h gets blocks_per_tile(tile, Br) thread blocks (tiling.h:
// tile_block), each owning up to Br of its rows; a block walks the tiles listed in
// row_ptr[qt] .. row_ptr[qt+1] (ascending, each once: set semantics by construction)
// and stages each tile's keys in chunks of Bc. `kBitmasks` selects whether a partial
// tile's bitmask is read (c08) or every listed tile is taken as full (c07, whose
// launcher checks all_tiles_full()).
#pragma once

#include "optimized/cuda/launch.cuh"

namespace sparseattn {
namespace cuda {

template <class Core, bool kBitmasks>
__global__ void __launch_bounds__(Core::kThreads) block_sparse_kernel(AttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const HeadView head = a.heads[h];
  const TileBlock tb = tile_block(blockIdx.x, head.tile, Core::kBr, a.seq_len_q);
  if (tb.i0 >= tb.i1) return;  // the whole block: past this head's last tile
  Core block(a, smem, b, h, Strided{tb.i0, 1, tb.i1 - tb.i0});
  const int64_t q_base = tb.qt * head.tile;
  for (int64_t e = head.row_ptr[tb.qt]; e < head.row_ptr[tb.qt + 1]; ++e) {
    const int64_t k_base = static_cast<int64_t>(head.col[e]) * head.tile;
    const int64_t k_end = min64(k_base + head.tile, a.seq_len_k);
    for (int64_t k0 = k_base; k0 < k_end; k0 += Core::kBc)
      block.visit(Strided{k0, 1, min64(Core::kBc, k_end - k0)}, [&](int64_t i, int64_t j) {
        return !kBitmasks || view_tile_allows(head, e, i - q_base, j - k_base);
      });
  }
  block.finish();
}

// Grid x covers the head with the most query blocks (per-head patterns may use
// different tile sizes); the other heads' extra blocks return at once.
template <DType dtype, bool kBitmasks>
void launch_block_sparse(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  int64_t blocks = 1;
  for (int64_t tile : p.pattern.packed.head_tile)
    blocks = max64(blocks, blocks_of(p.shape.seq_len_q, tile) * blocks_per_tile(tile, Core::kBr));
  launch_flash<Core>(block_sparse_kernel<Core, kBitmasks>, p, blocks, stream);
}

}  // namespace cuda
}  // namespace sparseattn
