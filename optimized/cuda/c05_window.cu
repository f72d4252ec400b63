// c05 — sliding / dilated window: visit only the keys the band can reach.
//
// Contract: matches a1_dense_masked at kTolFloat32 (float32) or, on the same rounded
// inputs, kTolBfloat16 (bf16) (core/numerics.h); pattern kind `window` (any window >= 0 or
// (left, right) pair, contract §3.3; dilation >= 1, causal or not, seq_len_q != seq_len_k aligned bottom-right, key
// padding allowed); head_dim, head_dim_v in [1, 256].
// Grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the modifiers in
// float32; flash_f32.cuh, flash_mma.cuh), checked by tests/cuda/cuda_kernels_test.cpp's
// Modern/CudaModernKinds cases when a device is present.
//
// What changed since c03/c04, and why: a dense kernel visits seq_len_k keys per row; a
// window of one-sided width w allows at most 2w + 1. The block asks band.h which keys
// its rows can reach and visits only those, then filters exactly with band_allows() —
// the window's rule is written once, in band.h, and shared with the CPU path.
// Dilation d (Beltagy et al. 2020, §3.1, "dilated sliding window") spreads those 2w + 1
// keys over 2wd + 1 positions; a contiguous span would waste d-1 of every d loads. But
// query i only reaches keys congruent to its position mod d, so blocks own rows of one
// residue class (i = rho + d*u) and stage keys of the matching class with stride d
// (tiling.h: dilated_rows, dilated_keys): every staged key is one some row may attend.
// Work per row is O(w * head_dim) whatever d, so the speedup over c03/c04 should approach
// the FLOP-reduction bound seq_len_k / (2w + 1) once chunks are full (the CUDA target:
// 0.6 of it at seq_len 32768).
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"), row
// "window (c05 bf16) speedup over our dense (c04 bf16) ≥ 0.6 × FLOP-reduction bound at
// seq_len 32768". History: optimized/cuda/TUNING.md.
#include "optimized/cuda/launch.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {

template <class Core>
__global__ void __launch_bounds__(Core::kThreads) window_kernel(AttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const Strided rows = dilated_rows(a.band, blockIdx.x, Core::kBr);
  if (rows.count == 0) return;  // the whole block: a residue class shorter than the others
  Core block(a, smem, b, h, rows);
  const Strided keys = dilated_keys(a.band, rows);
  // Rows and keys share a residue class, so every staged pair's offset is a multiple of
  // the dilation: band_range_allows is the band's rule without band_allows' two 64-bit
  // divisions, and chunks wholly inside the band skip the test (tiling.h).
  const BandRange band = band_range(a.band);
  for (int64_t c0 = 0; c0 < keys.count; c0 += Core::kBc) {
    const Strided chunk{keys.at(c0), keys.stride, min64(Core::kBc, keys.count - c0)};
    block.visit(chunk, [&](int64_t i, int64_t j) { return band_range_allows(band, i, j); },
                chunk_inside_band(band, rows, chunk));
  }
  block.finish();
}

template <DType dtype>
void launch_window(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  const BandParams& band = p.pattern.packed.band;
  // Residue classes rho >= seq_len_q hold no row: a dilation beyond seq_len_q adds none.
  const int64_t classes = min64(band.dilation, band.seq_len_q);
  const int64_t blocks = classes * dilated_blocks_per_class(band.seq_len_q, band.dilation, Core::kBr);
  launch_flash<Core>(window_kernel<Core>, p, blocks, stream);
}

}  // namespace

void launch_cuda_c05_window_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_window<DType::float32>(p, stream);
}
void launch_cuda_c05_window_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_window<DType::bfloat16>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c05_window_f32(const Pattern& p) { return p.spec.kind == PatternKind::window; }
bool serves_cuda_c05_window_bf16(const Pattern& p) { return p.spec.kind == PatternKind::window; }
}  // namespace entry
}  // namespace sparseattn
