// The one list of backward implementations (dq, dk, dv; contract §7, docs/backward.md),
// next to the forward registry (registry.h) and built the same way: entries live in
// registry/backward_kernels.def (and registry/cuda_backward_kernels.def with CUDA), an
// X-macro file that tests, benchmarks, `sparseattn impls` and `sparseattn attend --dout`
// iterate. Every backward entry names the forward kernel whose saved o and lse it consumes
// (FlashAttention-2 keeps o and lse from the forward pass, Dao 2023, Alg. 2).
#pragma once

#include <string>
#include <vector>

#include "registry/registry.h"

namespace sparseattn {

// Inputs of one backward call. `problem` holds q, k, v (float64 and float32), the pattern
// and the resolved scale. dout [B,H,Lq,Dv] (float64 and its float32 rounding). o/lse are the
// forward kernel's saved outputs, in its dtype: float64 kernels fill o/lse, float32 ones
// o32/lse32 (save_forward()).
struct GradProblem {
  const Problem* problem = nullptr;
  Tensor<double> dout;
  Tensor<float> dout32;
  Tensor<double> o, lse;
  Tensor<float> o32, lse32;
};

// A backward kernel writes dq/dk/dv in its own dtype: float64 kernels into dq/dk/dv,
// float32 kernels into dq32/dk32/dv32. Shapes: those of q, k, v (rank 4).
struct GradOutput {
  Tensor<double> dq, dk, dv;
  Tensor<float> dq32, dk32, dv32;
  // With sinks (contract §2.9): dσ [H_q], float64 whichever the kernel's dtype.
  Tensor<double> dsinks;
};

struct GradKernel {
  const char* name;        // e.g. "b1_dense_masked_grad", "cpu_kb01_generic_tiles_grad"
  Target target;
  DType dtype;
  const char* forward;     // forward kernel whose o/lse it consumes (and --impl that selects it)
  const char* reference;   // the kernel it must match ("b1_dense_masked_grad")
  double atol, rtol;       // from core/numerics.h
  const char* patterns;
  const char* summary;
  unsigned features;       // Feature bits it reads (registry.h; kPlain: none)
  bool (*serves)(const Pattern& pattern);
  void (*run_kernel)(const GradProblem& problem, GradOutput& out);

  // Runs the kernel; refuses a problem needing a feature its entry does not list, as
  // Kernel::run does.
  void run(const GradProblem& problem, GradOutput& out) const;
};

// Every backward kernel compiled into this build, in ladder order.
const std::vector<GradKernel>& grad_kernels();

// Looks a backward kernel up by name; throws InvalidArgument("impl") listing the names.
const GradKernel& find_grad_kernel(const std::string& name);

// The backward kernel whose `forward` is `forward_name` — the last such entry in ladder
// order (the highest rung: kb02 rather than kb01 for cpu_k06_generic_tiles) — or nullptr
// when it has none.
const GradKernel* grad_kernel_for_forward(const std::string& forward_name);

// Validates dout against the problem: shape [B,H,Lq,Dv] (leading 1s may be omitted) and
// every element finite. Throws InvalidArgument("dout shape", ...) or
// InvalidArgument("dout[b,h,i,e]", value, "must be finite"). Does not run the forward pass.
GradProblem make_grad_problem(const Problem& problem, Tensor<double> dout);

// Runs `kernel.forward` on gp.problem and keeps its o/lse in gp (the saved tensors).
// Not part of what a benchmark times for the backward pass.
void save_forward(const GradKernel& kernel, GradProblem& gp);

}  // namespace sparseattn
