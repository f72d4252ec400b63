// Registry entries of the optimized CPU ladder (registry/cpu_kernels.def): adapt a
// Problem (float32 copies of q/k/v, resolved scale) to the kernels' Inputs and allocate
// the float32 outputs.
#include "optimized/cpu/float32_guard.h"
#include "optimized/cpu/kernels.h"
#include "registry/registry.h"

namespace sparseattn::entry {
namespace {

using KernelFn = void (*)(const cpu::Inputs&, const cpu::Outputs&);

void run_cpu(KernelFn kernel, const char* name, const Problem& problem, Output& out) {
  const AttentionShape& s = problem.shape;
  Float32Plan plan;
  plan_float32(problem, name, plan);  // refuses a scale float32 cannot hold, before any work
  out.o32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v});
  out.lse32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q});
  cpu::Inputs in;
  in.q = plan.q32->ptr();
  in.k = problem.k32.ptr();
  in.v = problem.v32.ptr();
  in.shape = s;
  in.pattern = problem.pattern;
  in.scale = plan.scale32;
  kernel(in, cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}

}  // namespace

#define CPU_ENTRY(name, fn, serves)                                                     \
  void run_##name(const Problem& problem, Output& out) { run_cpu(&cpu::fn, #name, problem, out); } \
  bool serves_##name(const Pattern& pattern) { return cpu::serves(pattern); }

CPU_ENTRY(cpu_k01_dense_flash, k01_dense_flash, k01_serves)
CPU_ENTRY(cpu_k02_window_band, k02_window_band, k02_serves)
CPU_ENTRY(cpu_k03_window_dilated, k03_window_dilated, k03_serves)
CPU_ENTRY(cpu_k04_longformer, k04_longformer, k04_serves)
CPU_ENTRY(cpu_k05_bigbird_blocks, k05_bigbird_blocks, k05_serves)
CPU_ENTRY(cpu_k06_generic_tiles, k06_generic_tiles, k06_serves)

#undef CPU_ENTRY

}  // namespace sparseattn::entry
