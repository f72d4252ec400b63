// Registry entries of the optimized CPU backward ladder (registry/backward_kernels.def):
// adapt a GradProblem (float32 copies of q/k/v and dout, the float32 forward kernel's saved
// o/lse, resolved scale) to the kernels' GradInputs and allocate the float32 gradients.
#include "core/error.h"
#include "optimized/cpu/grad_kernels.h"
#include "registry/backward.h"

namespace sparseattn::entry {
namespace {

using GradFn = void (*)(const cpu::GradInputs&, const cpu::GradOutputs&);

void run_cpu_grad(GradFn kernel, const GradProblem& g, GradOutput& out) {
  const Problem& p = *g.problem;
  const AttentionShape& s = p.shape;
  require(g.o32.numel() == s.batch * s.num_heads * s.seq_len_q * s.head_dim_v &&
              g.lse32.numel() == s.batch * s.num_heads * s.seq_len_q,
          "o/lse", "missing", "a float32 backward needs its forward kernel's saved o and lse");
  out.dq32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q, s.head_dim});
  out.dk32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_k, s.head_dim});
  out.dv32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_k, s.head_dim_v});
  cpu::GradInputs in;
  in.q = p.q32.ptr();
  in.k = p.k32.ptr();
  in.v = p.v32.ptr();
  in.o = g.o32.ptr();
  in.lse = g.lse32.ptr();
  in.dout = g.dout32.ptr();
  in.shape = s;
  in.pattern = p.pattern;
  in.scale = static_cast<float>(p.scale);
  kernel(in, cpu::GradOutputs{out.dq32.ptr(), out.dk32.ptr(), out.dv32.ptr()});
}

}  // namespace

void grad_run_cpu_kb01_generic_tiles_grad(const GradProblem& g, GradOutput& out) {
  run_cpu_grad(&cpu::kb01_generic_tiles_grad, g, out);
}
bool grad_serves_cpu_kb01_generic_tiles_grad(const Pattern& pattern) {
  return cpu::kb01_serves(pattern);
}

void grad_run_cpu_kb02_generic_dq_lanes_grad(const GradProblem& g, GradOutput& out) {
  run_cpu_grad(&cpu::kb02_generic_dq_lanes_grad, g, out);
}
bool grad_serves_cpu_kb02_generic_dq_lanes_grad(const Pattern& pattern) {
  return cpu::kb02_serves(pattern);
}

}  // namespace sparseattn::entry
