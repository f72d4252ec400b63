// Registry entries of the optimized CPU backward ladder (registry/backward_kernels.def):
// adapt a GradProblem (float32 copies of q/k/v and dout, the float32 forward kernel's saved
// o/lse, resolved scale, the score modifiers in float32) to the kernels' GradInputs and
// allocate the float32 gradients: dk, dv with the kv heads' count (contract §2.7), dsinks
// [H_q] float64 with sinks (contract §2.9).
#include "core/error.h"
#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/mods32.h"
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
  out.dk32 = Tensor<float>({s.batch, s.num_kv_heads, s.seq_len_k, s.head_dim});
  out.dv32 = Tensor<float>({s.batch, s.num_kv_heads, s.seq_len_k, s.head_dim_v});
  Mods32 mods;
  convert_mods(p, mods);  // refuses what float32 cannot carry, as the forward entries do
  if (p.mods.has_sinks()) out.dsinks = Tensor<double>({s.num_heads}, 0.0);
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
  in.mods = mods.mods;
  kernel(in, cpu::GradOutputs{out.dq32.ptr(), out.dk32.ptr(), out.dv32.ptr(),
                              p.mods.has_sinks() ? out.dsinks.ptr() : nullptr});
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
