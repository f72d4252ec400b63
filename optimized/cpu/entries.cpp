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
#include "optimized/cpu/decode.h"
#include "optimized/cpu/kernels.h"
#include "optimized/cpu/kernels_bf16.h"
#include "optimized/cpu/mods32.h"
#include "optimized/cpu/to_bfloat16.h"
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

// k09 (optimized/cpu/decode.h) reads a cache problem in place (contract §2.11–§2.12): the
// slots past cache_seqlens[b] are no part of any row and need not be finite, so its float32
// guard (registry/float32_guard.h, the same rule and messages) bounds only the rows it reads.
namespace {

// f(row) for every K (or V) row of `x` that some element holds: all of [B, H_kv, L_k, w]
// without a cache, element b's first n_b slots of the cache, or its pages' slots < n_b.
template <class T, class F>
void for_each_filled_row(const Problem& p, int64_t width, const T* x, F f) {
  const int64_t hkv = p.shape.num_kv_heads;
  if (!p.cache) {
    for (int64_t r = 0; r < p.shape.batch * hkv * p.shape.seq_len_k; ++r) f(x + r * width);
    return;
  }
  const KvCache& c = *p.cache;
  const int64_t rows = c.paged() ? c.page_size : c.seq_len_cache;
  for (int64_t b = 0; b < c.batch(); ++b)
    for (int64_t kvh = 0; kvh < hkv; ++kvh)
      for (int64_t t = 0; t < c.seq_len_k(b); ++t) {
        const int64_t unit = c.paged() ? c.page(b, t) : b;
        const int64_t slot = c.paged() ? t % c.page_size : t;
        f(x + ((unit * hkv + kvh) * rows + slot) * width);
      }
}

struct RowBound {
  double max_abs = 0.0, max_norm = 0.0;
};
template <class T>
RowBound filled_bound(const Problem& p, const Tensor<T>& x, int64_t width) {
  RowBound b;
  for_each_filled_row(p, width, x.ptr(), [&](const T* row) {
    double ss = 0.0, big = 0.0;
    for (int64_t c = 0; c < width; ++c) {
      const double e = row[c];
      big = std::max(big, std::fabs(e));
      ss += e * e;
    }
    b.max_abs = std::max(b.max_abs, big);
    b.max_norm = std::max(b.max_norm, std::sqrt(ss));
  });
  return b;
}

// plan_float32 on the rows k09 reads: q whole, k and v their filled rows — of the float32
// copies when the problem has no float64 inputs (as plan_float32, float32_guard.h).
template <class T>
RowBound q_bound(const Tensor<T>& q, int64_t head_dim) {
  RowBound bq;
  for (size_t i = 0; i < q.data.size(); i += static_cast<size_t>(head_dim)) {
    double ss = 0.0;
    for (int64_t c = 0; c < head_dim; ++c) {
      const double e = q.data[i + c];
      bq.max_abs = std::max(bq.max_abs, std::fabs(e));
      ss += e * e;
    }
    bq.max_norm = std::max(bq.max_norm, std::sqrt(ss));
  }
  return bq;
}

void plan_float32_decode(const Problem& p, const char* name, Float32Plan& plan) {
  if (!p.cache) return plan_float32(p, name, plan);
  const bool f32_only = p.q.data.empty() && !p.q32.data.empty();
  const RowBound bq = f32_only ? q_bound(p.q32, p.shape.head_dim) : q_bound(p.q, p.shape.head_dim);
  const RowBound bk = f32_only ? filled_bound(p, p.k32, p.shape.head_dim)
                               : filled_bound(p, p.k, p.shape.head_dim);
  const RowBound bv = f32_only ? filled_bound(p, p.v32, p.shape.head_dim_v)
                               : filled_bound(p, p.v, p.shape.head_dim_v);
  const std::string why = std::string(" is beyond float32's range (3.4e38): the float32 kernel ") +
                          name + " cannot hold it; use a float64 kernel (a1_dense_masked)";
  const std::pair<Field, double> inputs[] = {
      {Field::q, bq.max_abs}, {Field::k, bk.max_abs}, {Field::v, bv.max_abs}};
  for (const auto& [field, m] : inputs)
    require_field(m <= FLT_MAX, field, "", "a tensor with max |x| = " + to_text(m),
                  "|x| = " + to_text(m) + why);
  const double s = std::fabs(p.scale), bound = s * bq.max_norm * bk.max_norm;
  if (!(bound <= kFloat32ScoreLimit) || !(s * bq.max_abs <= kFloat32ScoreLimit))
    throw FieldError(Field::scale, "", to_text(p.scale),
                     "scaled scores may reach |scale|·max‖q_i‖·max‖k_j‖ = " + to_text(bound) +
                         " (and lse with them), beyond float32's range for the float32 kernel " +
                         name + "; use a float64 kernel (a1_dense_masked) or a smaller --scale");
  plan.q32 = &p.q32;
  plan.scale32 = static_cast<float>(p.scale);
  if (s != 0.0 && s < FLT_MIN) {  // as plan_float32: the scale folded into q in float64
    plan.prescaled = Tensor<float>(p.q32.shape);
    for (size_t i = 0; i < p.q32.data.size(); ++i)
      plan.prescaled.data[i] = static_cast<float>(
          (f32_only ? static_cast<double>(p.q32.data[i]) : p.q.data[i]) * p.scale);
    plan.q32 = &plan.prescaled;
    plan.scale32 = 1.0f;
  }
}

// x rounded to bfloat16 whole (the layout stays in place), refusing like to_bfloat16 only a
// filled row's element that rounds to ±inf.
std::vector<uint16_t> to_bfloat16_filled(const Problem& p, const Tensor<float>& x, int64_t width,
                                         const char* what, const char* name) {
  if (!p.cache) return to_bfloat16(x, what, name);
  std::vector<uint16_t> h(x.data.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < x.numel(); ++i) h[i] = float_to_bfloat16(x.data[i]);
  const float* base = x.ptr();
  for_each_filled_row(p, width, base, [&](const float* row) {
    const int64_t at = row - base;
    for (int64_t c = 0; c < width; ++c)
      if ((h[at + c] & 0x7FFF) == 0x7F80 && std::isfinite(base[at + c]))
        throw InvalidArgument(what, "a tensor with |x| = " + to_text(std::fabs(base[at + c])),
                              "is beyond bfloat16's range (3.3895e38): the bf16 kernel " +
                                  std::string(name) + " cannot hold it; use its float32 variant");
  });
  return h;
}

template <class T>
cpu::DecodeInputsT<T> decode_inputs(const Problem& problem, const Float32Plan& plan,
                                    const Mods32& mods, const T* q, const T* k, const T* v) {
  cpu::DecodeInputsT<T> in;
  in.q = q;
  in.k = k;
  in.v = v;
  in.shape = problem.shape;
  in.cache = problem.cache ? &*problem.cache : nullptr;
  in.pattern = problem.pattern;
  in.scale = plan.scale32;
  in.mods = mods.mods;
  return in;
}

}  // namespace

void run_cpu_k09_decode(const Problem& problem, Output& out) {
  Float32Plan plan;
  plan_float32_decode(problem, "cpu_k09_decode", plan);
  Mods32 mods;
  convert_mods(problem, mods);
  shape_outputs(problem.shape, out);
  cpu::k09_decode(decode_inputs(problem, plan, mods, plan.q32->ptr(), problem.k32.ptr(),
                                problem.v32.ptr()),
                  cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}
bool serves_cpu_k09_decode(const Pattern& pattern) { return cpu::k09_serves(pattern); }

// The bf16 twin: q32, k32, v32 rounded to bfloat16 inside the run, as every bf16 entry.
void run_cpu_k09_decode_bf16(const Problem& problem, Output& out) {
  const char* name = "cpu_k09_decode_bf16";
  Float32Plan plan;
  plan_float32_decode(problem, name, plan);
  Mods32 mods;
  convert_mods(problem, mods);
  const std::vector<uint16_t> q = to_bfloat16(*plan.q32, "q", name);
  const std::vector<uint16_t> k =
      to_bfloat16_filled(problem, problem.k32, problem.shape.head_dim, "k", name);
  const std::vector<uint16_t> v =
      to_bfloat16_filled(problem, problem.v32, problem.shape.head_dim_v, "v", name);
  shape_outputs(problem.shape, out);
  cpu::k09_decode_bf16(decode_inputs(problem, plan, mods, q.data(), k.data(), v.data()),
                       cpu::Outputs{out.o32.ptr(), out.lse32.ptr()});
}
bool serves_cpu_k09_decode_bf16(const Pattern& pattern) { return cpu::k09_serves(pattern); }

}  // namespace sparseattn::entry
