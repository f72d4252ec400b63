// Registry entries of the optimized CPU ladder (registry/cpu_kernels.def): adapt a
// Problem (float32 copies of q/k/v, resolved scale) to the kernels' Inputs and allocate
// the float32 outputs. The bf16 entries (cpu_k0*_bf16) round the float32 copies to
// bfloat16 first (below).
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "core/bfloat16.h"
#include "core/field.h"
#include "registry/float32_guard.h"
#include "optimized/cpu/compat_kernels.h"
#include "optimized/cpu/kernels.h"
#include "optimized/cpu/kernels_bf16.h"
#include "optimized/cpu/mods32.h"
#include "registry/registry.h"

namespace sparseattn::entry {
namespace {

using KernelFn = void (*)(const cpu::Inputs&, const cpu::Outputs&);

// The float32 outputs o [batch, num_heads, seq_len_q, head_dim_v] and lse [batch,
// num_heads, seq_len_q]: kept when the caller passes them in already of that shape (a
// benchmark's loop, a caller reusing its buffers), since every kernel writes every element
// of both; allocated otherwise. A fresh 4 MB output per call cost about 2 ms of page faults
// and unmapping in a 22 ms BigBird call at n = 16384.
void shape_outputs(const AttentionShape& s, Output& out) {
  const Shape o{s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};
  const Shape lse{s.batch, s.num_heads, s.seq_len_q};
  if (out.o32.shape != o) out.o32 = Tensor<float>(o);
  if (out.lse32.shape != lse) out.lse32 = Tensor<float>(lse);
}

}  // namespace

// Declared in mods32.h (the backward entries, grad_entries.cpp, convert the same way).
void convert_mods(const Problem& problem, Mods32& m) {
  const ScoreMods& sm = problem.mods;
  if (sm.softcap) {
    const double c = *sm.softcap;
    if (!(c >= FLT_MIN && c <= kFloat32ScoreLimit))
      throw FieldError(Field::softcap, "", to_text(c),
                       "must lie in [1.2e-38, 1e37] (float32's range) for the CPU kernels");
    m.mods.softcap = static_cast<float>(c);
  }
  // what: the bound in words, e.g. "|σ| <= 1e37".
  auto to_float = [](const Tensor<double>& t, double limit, Field field, const std::string& what) {
    std::vector<float> f(t.data.size());
    for (size_t i = 0; i < f.size(); ++i) {
      if (!(std::fabs(t.data[i]) <= limit))
        throw FieldError(field, "", to_text(t.data[i]),
                         "must satisfy " + what + " (float32's score range) for the CPU kernels");
      f[i] = static_cast<float>(t.data[i]);
    }
    return f;
  };
  if (sm.alibi_slopes) {
    const Tensor<double>& a = *sm.alibi_slopes;
    const double longest = static_cast<double>(
        std::max<int64_t>(problem.shape.seq_len_q, problem.shape.seq_len_k));
    m.slopes = to_float(a, kFloat32ScoreLimit / longest, Field::alibi_slopes,
                        "|a|·max(L_q, L_k) <= 1e37, here |a| <= " +
                            to_text(kFloat32ScoreLimit / longest));
    m.mods.slopes = m.slopes.data();
    m.mods.slopes_batch_stride = a.rank() == 1 ? 0 : a.dim(1);
  }
  if (sm.sinks) {
    m.sinks = to_float(*sm.sinks, kFloat32ScoreLimit, Field::sinks, "|σ| <= 1e37");
    m.mods.sinks = m.sinks.data();
  }
}

namespace {

void run_cpu(KernelFn kernel, const char* name, const Problem& problem, Output& out) {
  const AttentionShape& s = problem.shape;
  Float32Plan plan;
  plan_float32(problem, name, plan);  // refuses a scale float32 cannot hold, before any work
  Mods32 mods;
  convert_mods(problem, mods);
  shape_outputs(s, out);
  cpu::Inputs in;
  in.q = plan.q32->ptr();
  in.k = problem.k32.ptr();
  in.v = problem.v32.ptr();
  in.shape = s;
  in.pattern = problem.pattern;
  in.scale = plan.scale32;
  in.mods = mods.mods;
  kernel(in, cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}

using KernelBf16Fn = void (*)(const cpu::InputsBf16&, const cpu::Outputs&);

// x rounded to bfloat16, round to nearest even (core/bfloat16.h), on the OpenMP team.
// Throws InvalidArgument(name) when an element rounds to ±inf: it lies between bfloat16's
// largest finite value (3.3895e38) and float32's, where no bf16 kernel can hold it.
std::vector<uint16_t> to_bfloat16(const Tensor<float>& x, const char* name, const char* kernel) {
  const int64_t n = x.numel();
  std::vector<uint16_t> h(static_cast<size_t>(n));
  int inf = 0;
#pragma omp parallel for schedule(static) reduction(| : inf)
  for (int64_t i = 0; i < n; ++i) {
    h[i] = float_to_bfloat16(x.data[i]);
    inf |= (h[i] & 0x7FFF) == 0x7F80;
  }
  for (int64_t i = 0; inf && i < n; ++i)
    if ((h[i] & 0x7FFF) == 0x7F80 && std::isfinite(x.data[i]))
      throw InvalidArgument(name, "a tensor with |x| = " + to_text(std::fabs(x.data[i])),
                            "|x| = " + to_text(std::fabs(x.data[i])) +
                                " is beyond bfloat16's range (3.3895e38): the bf16 kernel " +
                                kernel + " cannot hold it; use its float32 variant");
  return h;
}

// The bf16 entries: the float32 guard (scale, range; registry/float32_guard.h), then q32 (or
// q·scale folded in float64, for a scale below float32's normal range), k32 and v32 rounded
// to bfloat16 — INSIDE the timed run (the benchmark times run()): 3 conversions per input
// element, a few percent of a kernel's time at n = 4096 (optimized/cpu/README.md). The
// result is compared with the oracle on the same rounded inputs (docs/numerics.md).
void run_cpu_bf16(KernelBf16Fn kernel, const char* name, const Problem& problem, Output& out) {
  const AttentionShape& s = problem.shape;
  Float32Plan plan;
  plan_float32(problem, name, plan);
  Mods32 mods;
  convert_mods(problem, mods);
  const std::vector<uint16_t> q = to_bfloat16(*plan.q32, "q", name);
  const std::vector<uint16_t> k = to_bfloat16(problem.k32, "k", name);
  const std::vector<uint16_t> v = to_bfloat16(problem.v32, "v", name);
  shape_outputs(s, out);
  cpu::InputsBf16 in;
  in.q = q.data();
  in.k = k.data();
  in.v = v.data();
  in.shape = s;
  in.pattern = problem.pattern;
  in.scale = plan.scale32;
  in.mods = mods.mods;
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

#define CPU_BF16_ENTRY(name, fn, serves)                                                     \
  void run_##name(const Problem& problem, Output& out) {                                   \
    run_cpu_bf16(&cpu::fn, #name, problem, out);                                           \
  }                                                                                        \
  bool serves_##name(const Pattern& pattern) { return cpu::serves(pattern); }

CPU_BF16_ENTRY(cpu_k01_dense_flash_bf16, k01_dense_flash_bf16, k01_serves)
CPU_BF16_ENTRY(cpu_k02_window_band_bf16, k02_window_band_bf16, k02_serves)
CPU_BF16_ENTRY(cpu_k03_window_dilated_bf16, k03_window_dilated_bf16, k03_serves)
CPU_BF16_ENTRY(cpu_k04_longformer_bf16, k04_longformer_bf16, k04_serves)
CPU_BF16_ENTRY(cpu_k05_bigbird_blocks_bf16, k05_bigbird_blocks_bf16, k05_serves)
CPU_BF16_ENTRY(cpu_k06_generic_tiles_bf16, k06_generic_tiles_bf16, k06_serves)

#undef CPU_BF16_ENTRY

// k07 reads HF's listing of the pattern's draws (optimized/cpu/compat_kernels.h), after the
// float32 guard like every float32 entry.
void run_cpu_k07_hf_listing(const Problem& problem, Output& out) {
  const BlockListing listing = cpu::k07_listing(*problem.pattern);  // refuses what HF cannot list
  Float32Plan plan;
  plan_float32(problem, "cpu_k07_hf_listing", plan);
  shape_outputs(problem.shape, out);
  const auto& kp = problem.pattern->spec.key_padding_mask;
  cpu::k07_hf_listing(plan.q32->ptr(), problem.k32.ptr(), problem.v32.ptr(), problem.shape, listing,
                      kp ? kp->ptr() : nullptr, plan.scale32, out.o32.ptr(), out.lse32.ptr());
}
bool serves_cpu_k07_hf_listing(const Pattern& pattern) { return cpu::k07_serves(pattern); }

}  // namespace sparseattn::entry
