// c03 — flash-style fused dense attention, float32: one pass, online softmax, nothing
// of size seq_len^2 anywhere.
//
// Contract: matches a1_dense_masked at kTolFloat32 (core/numerics.h) on float32 inputs;
// pattern kind `dense` (causal or not, key padding allowed); head_dim, head_dim_v in
// [1, 256]; grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the
// modifiers in float32; flash_f32.cuh), checked by tests/cuda/cuda_kernels_test.cpp's
// CudaModern cases when a device is present.
//
// What changed since c02, and why: c02 read K twice (max, then sum) and accumulated o
// in global memory. Here a block of Br = 32 rows keeps, per row, the running max m, the
// running sum l and the unnormalized output o in registers; each key chunk is scored
// once and folded in by rescaling with alpha = exp(m_old - m_new) (FlashAttention, Dao
// et al. 2022, Alg. 1; the online softmax of Milakov & Gimelshein 2018). K and V are
// read once per query block, and the work per chunk is spread over a warp per row
// instead of one thread. The block itself lives in flash_f32.cuh, because c05..c08
// reuse it and change only which chunks they visit.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"). History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/c03_flash_dense.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

void launch_cuda_c03_flash_dense(DeviceProblem& p, cudaStream_t stream) {
  launch_flash_dense<DType::float32>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c03_flash_dense(const Pattern& p) { return p.spec.kind == PatternKind::dense; }
}  // namespace entry
}  // namespace sparseattn
