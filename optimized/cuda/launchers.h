// launch_<name>(DeviceProblem&, cudaStream_t) for every entry of registry/cuda_kernels.def,
// declared from that one list. A launcher only enqueues work (no synchronization, no
// copies): benchmarks time exactly this.
#pragma once

#include <cuda_runtime.h>

#include "optimized/cuda/device_problem.h"

namespace sparseattn {
namespace cuda {

#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  void launch_##name(DeviceProblem& problem, cudaStream_t stream);
#include "registry/cuda_kernels.def"
#undef X

// The launcher of a CUDA registry entry, and the dtype its inputs are uploaded in.
struct CudaLauncher {
  const char* name;
  DType dtype;
  LaunchFn launch;
};
const CudaLauncher& find_launcher(const std::string& name);

}  // namespace cuda
}  // namespace sparseattn
