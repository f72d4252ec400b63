// c06 — Longformer: sliding window plus global tokens (Beltagy et al. 2020, §3.1), walked
// through the pattern's own tiles.
//
// Contract: matches a1_dense_masked at kTolFloat32 (float32) or, on the same rounded
// inputs, kTolBfloat16 (bf16); pattern kind `longformer`, non-causal, with
// seq_len_q == seq_len_k (window, dilation, global positions, key padding); head_dim,
// head_dim_v in [1, 256]. Causal Longformer goes to c08.
// Grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the modifiers in
// float32; flash_f32.cuh, flash_mma.cuh; split-K adds the sink once, in the merge), checked by tests/cuda/cuda_kernels_test.cpp's
// Modern/CudaModernKinds cases when a device is present.
//
// What changed since c05, and why: a global token attends every key and every query
// attends it (contract §3). c06 does not restate that rule: the canonical layout
// (pattern/layout.h, uploaded once by device_pattern) already lists, for each
// query tile, the band's tiles plus every tile holding a global key — and every key tile
// for a tile holding a global query — each once (set semantics, contract §2), the band's
// diagonal edge as partial tiles with their bitmask. So c06 walks the packed layout
// (block_sparse.cuh) like c07 and c08: one source of truth for which pairs are allowed.
// What Longformer adds is an imbalance: a global query tile visits all n / tile key
// tiles while a window tile visits about 2w / tile + |G| of them. Thread blocks are
// dispatched roughly in index order, so the grid follows the heavy-first schedule
// (PackedPattern::schedule): the global rows of every head start first and run while the
// light tiles fill the other multiprocessors, instead of running alone at the end.
// Full tiles (global rows and columns, the band's interior) skip the per-pair bit test.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"). History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/block_sparse.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {
bool serves_longformer(const Pattern& p) {
  return p.spec.kind == PatternKind::longformer && !p.spec.causal &&
         p.sizes.seq_len_q == p.sizes.seq_len_k;
}
}  // namespace

void launch_cuda_c06_longformer_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::float32, true>(p, stream);
}
void launch_cuda_c06_longformer_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_block_sparse<DType::bfloat16, true>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c06_longformer_f32(const Pattern& p) { return cuda::serves_longformer(p); }
bool serves_cuda_c06_longformer_bf16(const Pattern& p) { return cuda::serves_longformer(p); }
}  // namespace entry
}  // namespace sparseattn
