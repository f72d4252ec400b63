// c08 — generic sparse attention over the canonical layout: full and partial tiles.
//
// Contract: matches a1_dense_masked at kTolFloat32 (float32) or, on the same rounded
// inputs, kTolBfloat16 (bf16); ANY pattern kind (dense, window, longformer, random,
// bigbird, bigbird-etc, hierarchical, explicit, per-head; key padding allowed);
// head_dim, head_dim_v in [1, 256].
// Grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the modifiers in
// float32; flash_f32.cuh, flash_mma.cuh; split-K adds the sink once, in the merge), checked by tests/cuda/cuda_kernels_test.cpp's
// Modern/CudaModernKinds cases when a device is present.
//
// What changed since c07, and why: c07 trusted that every listed tile is full. The
// canonical HeadLayout (pattern/layout.h) also has partial tiles — a window's
// diagonal edge, token-level random keys, an explicit mask — each with a bitmask of
// `tile` rows. c08 reads the bit of each (query, key) pair of a partial tile and skips
// the lookup for full ones; the tile table says which. It is the kernel of last resort:
// one code path for every pattern, as FlexAttention's BlockMask (full + partial blocks
// with a mask_mod) is. Its cost is the bit lookup and visiting whole tiles where only a
// few pairs are allowed, so c05/c06 should beat it on windows and c07 match it on
// BigBird.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"). History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/block_sparse.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

void launch_cuda_c08_generic_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::float32, true>(p, stream);
}
void launch_cuda_c08_generic_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::bfloat16, true>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c08_generic_f32(const Pattern&) { return true; }
bool serves_cuda_c08_generic_bf16(const Pattern&) { return true; }
}  // namespace entry
}  // namespace sparseattn
