// Launching a flash-block kernel (flash_f32.cuh / flash_mma.cuh), checked: head sizes
// within the block's limits, shared memory opted in and available, grid within CUDA's
// limits, and the launch's own error surfaced at once (CUDA_CHECK_LAUNCH).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/flash_f32.cuh"
#include "optimized/cuda/flash_mma.cuh"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

// The flash block of each input dtype.
template <DType>
struct CoreOf;
template <>
struct CoreOf<DType::float32> { using type = FlashF32Block; };
template <>
struct CoreOf<DType::float16> { using type = FlashMmaBlock<__half>; };
template <>
struct CoreOf<DType::bfloat16> { using type = FlashMmaBlock<__nv_bfloat16>; };

// Launches `kernel` on grid g with `args` (DeviceProblem::args(), possibly amended).
template <class Core>
void launch_flash_grid(void (*kernel)(AttnArgs), DeviceProblem& p, const AttnArgs& args, Grid g,
                       cudaStream_t stream) {
  const AttentionShape& s = p.shape;
  require(s.head_dim <= Core::kMaxHeadDim, "head_dim", s.head_dim,
          "the CUDA flash kernels take 1 .. " + std::to_string(Core::kMaxHeadDim));
  require(s.head_dim_v <= Core::kMaxHeadDim, "head_dim_v", s.head_dim_v,
          "the CUDA flash kernels take 1 .. " + std::to_string(Core::kMaxHeadDim));
  const size_t smem = Core::smem_bytes(s.head_dim, s.head_dim_v);
  configure_shared_memory(reinterpret_cast<const void*>(kernel), smem, "head_dim", s.head_dim);
  g = attention_grid(g.x, g.y, g.z);
  kernel<<<dim3(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z)),
           Core::kThreads, smem, stream>>>(args);
  CUDA_CHECK_LAUNCH();
}

// The common grid: x = query blocks, y = heads, z = batch.
template <class Core>
void launch_flash(void (*kernel)(AttnArgs), DeviceProblem& p, int64_t num_query_blocks,
                  cudaStream_t stream) {
  launch_flash_grid<Core>(kernel, p, p.args(), Grid{num_query_blocks, p.shape.num_heads, p.shape.batch}, stream);
}

}  // namespace cuda
}  // namespace sparseattn
