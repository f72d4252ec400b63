// c04 — c03 on tensor cores: fp16 / bf16 inputs, float32 accumulation (WMMA).
//
// Contract: matches a1_dense_masked evaluated on the same rounded inputs
// (round_like_device) at kTolFloat16 (fp16) / kTolBfloat16 (bf16) (core/numerics.h);
// pattern kind `dense` (causal or not, key padding allowed); head_dim, head_dim_v in
// [1, 256], zero-padded to multiples of 16 inside the block; the block's shared memory
// (FlashMmaBlock::smem_bytes: 110 KB at head_dim 128) must fit the device (checked).
// Grouped kv heads, softcap, ALiBi slopes and sinks (contract §2.7-§2.9, the modifiers in
// float32; flash_f32.cuh, flash_mma.cuh), checked by tests/cuda/cuda_kernels_test.cpp's
// Modern/CudaModernKinds cases when a device is present.
//
// What changed since c03, and why: on an H100/H200 plain float32 FMAs give ~67 TFLOP/s
// while fp16/bf16 tensor cores give ~990 (vendor figures, not ours): attention is two
// matrix products, so both move to 16x16x16 WMMA fragments (flash_mma.cuh). The kernel is
// c03's, unchanged — only the block is swapped — which is the point of keeping the online
// softmax apart from the visiting order. bf16 keeps float32's exponent range (no overflow
// of large scores) at 8 bits of mantissa; fp16 has 11 bits but overflows above 65504.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"), row "flash
// dense bf16 (c04) ≥ 0.5 × SDPA throughput, same shapes". What was counted without a
// GPU (its SASS) and the history: optimized/cuda/TUNING.md.
#include "optimized/cuda/c03_flash_dense.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

void launch_cuda_c04_flash_dense_f16(DeviceProblem& p, cudaStream_t stream) {
  launch_flash_dense<DType::float16>(p, stream);
}
void launch_cuda_c04_flash_dense_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_flash_dense<DType::bfloat16>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c04_flash_dense_f16(const Pattern& p) { return p.spec.kind == PatternKind::dense; }
bool serves_cuda_c04_flash_dense_bf16(const Pattern& p) { return p.spec.kind == PatternKind::dense; }
}  // namespace entry
}  // namespace sparseattn
