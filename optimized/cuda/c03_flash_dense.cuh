// The dense flash kernel, templated over the flash block (flash_f32.cuh for c03,
// flash_mma.cuh for c04): query block x owns rows [x*Br, x*Br + Br) and visits the key
// chunks band_chunks() gives for the dense band — all of them, or for a causal pattern
// only those at or below the diagonal — testing pairs only on chunks the diagonal cuts. See c03_flash_dense.cu for the contract.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"): c03 and c04
// are this kernel. History: optimized/cuda/TUNING.md.
#pragma once

#include "optimized/cuda/launch.cuh"

namespace sparseattn {
namespace cuda {

template <class Core>
__global__ void __launch_bounds__(Core::kThreads) flash_dense_kernel(AttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t i0 = blockIdx.x * static_cast<int64_t>(Core::kBr);
  const Strided rows{i0, 1, min64(Core::kBr, a.seq_len_q - i0)};
  Core block(a, smem, b, h, rows);
  const ChunkRange chunks = band_chunks(a.band, i0, i0 + rows.count, Core::kBc);
  // The dense band has dilation 1: band_range_allows is its rule without a division, and a
  // chunk wholly inside the band (every chunk of a non-causal row block; all but the
  // diagonal ones of a causal one) skips the per-pair test.
  const BandRange band = band_range(a.band);
  for (int64_t k0 = chunks.begin; k0 < chunks.end; k0 += Core::kBc) {
    const Strided keys{k0, 1, min64(Core::kBc, chunks.end - k0)};
    block.visit(keys, [&](int64_t i, int64_t j) { return band_range_allows(band, i, j); },
                chunk_inside_band(band, rows, keys));
  }
  block.finish();
}

template <DType dtype>
void launch_flash_dense(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  launch_flash<Core>(flash_dense_kernel<Core>, p, blocks_of(p.shape.seq_len_q, Core::kBr), stream);
}

}  // namespace cuda
}  // namespace sparseattn
