// c07 — BigBird block-sparse attention (ITC and ETC), driven by the block table.
//
// Contract: matches a1_dense_masked at kTolFloat32 (float32) or, on the same rounded
// inputs, kTolBfloat16 (bf16); pattern kinds `bigbird` and `bigbird_etc` whose layout
// lists only full tiles (every listed block pair wholly allowed, as BigBird's blocks
// are), key padding allowed; head_dim, head_dim_v in [1, 256]. Any block_size works;
// multiples of the block's Br/Bc (32 float32, 64 bf16) waste nothing.
// Grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the modifiers in
// float32; flash_f32.cuh, flash_mma.cuh; split-K adds the sink once, in the merge), checked by tests/cuda/cuda_kernels_test.cpp's
// Modern/CudaModernKinds cases when a device is present.
//
// What changed since c06, and why: BigBird's pattern is a list of key blocks per query
// block — window blocks, global blocks and r random blocks (Zaheer et al. 2020, §2,
// App. D, Fig. 5) — so a kernel should walk that list, not evaluate a predicate. The
// list is the materialized layout's tile table (one row per query block, key blocks
// ascending, each once), uploaded once by device_pattern; the random blocks were drawn
// by materialize() on the host and arrive as table entries — no kernel draws a random
// number or rebuilds the pattern. With full tiles there is no per-element mask: only
// the sequence's end and key padding cut a block.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"), row
// "BigBird bf16 (c07) ≥ 0.8 × FlexAttention with the equivalent block mask". History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/block_sparse.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {
bool serves_bigbird(const Pattern& p) {
  return (p.spec.kind == PatternKind::bigbird || p.spec.kind == PatternKind::bigbird_etc) &&
         all_tiles_full(p);
}
}  // namespace

void launch_cuda_c07_bigbird_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::float32, false>(p, stream);
}
void launch_cuda_c07_bigbird_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::bfloat16, false>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c07_bigbird_f32(const Pattern& p) { return cuda::serves_bigbird(p); }
bool serves_cuda_c07_bigbird_bf16(const Pattern& p) { return cuda::serves_bigbird(p); }
}  // namespace entry
}  // namespace sparseattn
