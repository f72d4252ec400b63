// The registry's run_<name> for every CUDA kernel, and the launcher table benchmarks
// use, both generated from registry/cuda_kernels.def (the one list).
#include "core/numerics.h"
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/launchers.h"

namespace sparseattn {

namespace entry {
// A kernel handed a pattern it does not serve refuses by name (before looking for a
// device, so the refusal is the same on every machine) instead of computing some other
// pattern's answer.
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  bool serves_##name(const Pattern& pattern);                                              \
  void run_##name(const Problem& problem, Output& out) {                                   \
    require(serves_##name(*problem.pattern), "pattern (for " #name ")",                    \
            describe(problem.pattern->spec), "this kernel serves only: " patterns);         \
    cuda::run_on_device(problem, out, DType::dtype, &cuda::launch_##name, #name);          \
  }
#include "registry/cuda_kernels.def"
#undef X
}  // namespace entry

namespace cuda {

const CudaLauncher& find_launcher(const std::string& name) {
  static const CudaLauncher table[] = {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  {#name, DType::dtype, &launch_##name},
#include "registry/cuda_kernels.def"
#undef X
  };
  for (const CudaLauncher& l : table)
    if (name == l.name) return l;
  throw InvalidArgument("impl", name, "is not a CUDA kernel of registry/cuda_kernels.def");
}

}  // namespace cuda
}  // namespace sparseattn
