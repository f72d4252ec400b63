// Registry entries of the selected-attention CPU kernels (contract §3.16, §7.9): k08 and
// its bf16 twin in registry/cpu_kernels.def, kb03 and its bf16 twin in
// registry/backward_kernels.def. They adapt a Problem as entries.cpp and grad_entries.cpp
// do; the bf16 twins round q32, k32, v32 to bfloat16 inside the run (to_bfloat16.h), as
// every bf16 entry does. dk and dv keep k's H_kv heads (contract §2.7).
#include <string>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/selected_kernels.h"
#include "optimized/cpu/to_bfloat16.h"
#include "registry/backward.h"
#include "registry/float32_guard.h"
#include "registry/registry.h"

namespace sparseattn::entry {

namespace {

// What the float32 and bf16 entries of one kernel share: the outputs shaped and every input
// but q, k and v filled. The entries differ only in the q, k, v they hand over: float32 as
// stored, or rounded to bfloat16 inside the run.
template <class In>
void k08_prepare(const Problem& problem, const Float32Plan& plan, Output& out, In& in) {
  const AttentionShape& s = problem.shape;
  const Shape o{s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};
  const Shape lse{s.batch, s.num_heads, s.seq_len_q};
  if (out.o32.shape != o) out.o32 = Tensor<float>(o);
  if (out.lse32.shape != lse) out.lse32 = Tensor<float>(lse);
  in.shape = s;
  in.pattern = problem.pattern;
  in.scale = plan.scale32;
}

// The backward's share: the forward's saved o and lse required, dq [B, H_q, L_q, d] and
// dk, dv [B, H_kv, L_k, d | d_v] shaped, o, lse, dout and the scale filled.
template <class In>
void kb03_prepare(const GradProblem& g, const char* dtype, GradOutput& out, In& in) {
  const Problem& p = *g.problem;
  const AttentionShape& s = p.shape;
  require(g.o32.numel() == s.batch * s.num_heads * s.seq_len_q * s.head_dim_v &&
              g.lse32.numel() == s.batch * s.num_heads * s.seq_len_q,
          "o/lse", "missing",
          std::string("a ") + dtype + " backward needs its forward kernel's saved o and lse");
  out.dq32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q, s.head_dim});
  out.dk32 = Tensor<float>({s.batch, s.num_kv_heads, s.seq_len_k, s.head_dim});
  out.dv32 = Tensor<float>({s.batch, s.num_kv_heads, s.seq_len_k, s.head_dim_v});
  in.o = g.o32.ptr();
  in.lse = g.lse32.ptr();
  in.dout = g.dout32.ptr();
  in.shape = s;
  in.pattern = p.pattern;
  in.scale = static_cast<float>(p.scale);
}

}  // namespace

void run_cpu_k08_selected_gather(const Problem& problem, Output& out) {
  Float32Plan plan;
  plan_float32(problem, "cpu_k08_selected_gather", plan);  // refuses a scale float32 cannot hold
  cpu::Inputs in;
  k08_prepare(problem, plan, out, in);
  in.q = plan.q32->ptr();
  in.k = problem.k32.ptr();
  in.v = problem.v32.ptr();
  cpu::k08_selected_gather(in, cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}
bool serves_cpu_k08_selected_gather(const Pattern& pattern) { return cpu::k08_serves(pattern); }

// The bf16 twin: the float32 guard (scale, range), then q32 (or q·scale folded, for a scale
// below float32's normal range), k32 and v32 rounded to bfloat16, as run_cpu_bf16 in
// entries.cpp does.
void run_cpu_k08_selected_gather_bf16(const Problem& problem, Output& out) {
  const char* name = "cpu_k08_selected_gather_bf16";
  Float32Plan plan;
  plan_float32(problem, name, plan);
  const std::vector<uint16_t> q = to_bfloat16(*plan.q32, "q", name);
  const std::vector<uint16_t> k = to_bfloat16(problem.k32, "k", name);
  const std::vector<uint16_t> v = to_bfloat16(problem.v32, "v", name);
  cpu::InputsBf16 in;
  k08_prepare(problem, plan, out, in);
  in.q = q.data();
  in.k = k.data();
  in.v = v.data();
  cpu::k08_selected_gather_bf16(in, cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}
bool serves_cpu_k08_selected_gather_bf16(const Pattern& pattern) {
  return cpu::k08_serves(pattern);
}

void grad_run_cpu_kb03_selected_gather_grad(const GradProblem& g, GradOutput& out) {
  const Problem& p = *g.problem;
  cpu::GradInputs in;
  kb03_prepare(g, "float32", out, in);
  in.q = p.q32.ptr();
  in.k = p.k32.ptr();
  in.v = p.v32.ptr();
  cpu::kb03_selected_gather_grad(in, cpu::GradOutputs{out.dq32.ptr(), out.dk32.ptr(), out.dv32.ptr()});
}
bool grad_serves_cpu_kb03_selected_gather_grad(const Pattern& pattern) {
  return cpu::kb03_serves(pattern);
}

// The bf16 twin: q32, k32, v32 rounded to bfloat16 as the forward twin rounds them; o and
// lse are cpu_k08_selected_gather_bf16's saved float32 outputs, dout float32.
void grad_run_cpu_kb03_selected_gather_grad_bf16(const GradProblem& g, GradOutput& out) {
  const char* name = "cpu_kb03_selected_gather_grad_bf16";
  const Problem& p = *g.problem;
  cpu::GradInputsBf16 in;
  kb03_prepare(g, "bf16", out, in);
  const std::vector<uint16_t> q = to_bfloat16(p.q32, "q", name);
  const std::vector<uint16_t> k = to_bfloat16(p.k32, "k", name);
  const std::vector<uint16_t> v = to_bfloat16(p.v32, "v", name);
  in.q = q.data();
  in.k = k.data();
  in.v = v.data();
  cpu::kb03_selected_gather_grad_bf16(
      in, cpu::GradOutputs{out.dq32.ptr(), out.dk32.ptr(), out.dv32.ptr()});
}
bool grad_serves_cpu_kb03_selected_gather_grad_bf16(const Pattern& pattern) {
  return cpu::kb03_serves(pattern);
}

}  // namespace sparseattn::entry
