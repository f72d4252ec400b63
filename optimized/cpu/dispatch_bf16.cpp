// The public bf16 kernel entry points (kernels_bf16.h): each forwards to the build of the
// kernel that active_isa() names (isa.h); inside the avx512 build, with_bf16_engine()
// (flash_tile_bf16.h) takes the dot engine only on a CPU with AVX512-BF16 and only when
// this process chose it (bf16_engine_choice below: measured rates, SPARSEATTN_BF16_ENGINE),
// and the AMX engine before it where bf16_amx_engine_selected().
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/isa_kernels.h"
#include "optimized/cpu/kernels_bf16.h"
#include "optimized/cpu/selected_kernels.h"
#include "optimized/cpu/thread_clock.h"

namespace sparseattn::cpu {
namespace {
// A test's force: 0 none (the process's choice), 1 widen, 2 dot.
enum Forced : int { kNone = 0, kWiden = 1, kDot = 2 };
std::atomic<int> g_forced{kNone};

const char* kEngineVariable = "SPARSEATTN_BF16_ENGINE";

// Thread CPU seconds of f(iterations): time slices lost to other jobs do not count.
template <class F>
double cpu_seconds_of(F f, int64_t iterations) {
  const double t0 = thread_cpu_seconds();
  volatile float sink = f(iterations);
  (void)sink;
  return thread_cpu_seconds() - t0;
}
}  // namespace

// bf16_engine_choice() first, in either build: the engine is fixed at the first bf16 call,
// and a bad SPARSEATTN_BF16_ENGINE is refused even where the avx2 build runs.
#define SPARSEATTN_DISPATCH_BF16(kernel, serves)                                    \
  void kernel(const InputsBf16& in, const Outputs& out) {                           \
    bf16_engine_choice();                                                           \
    if (active_isa() == Isa::avx512) return avx512::kernel(in, out);                \
    return avx2::kernel(in, out);                                                   \
  }

SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DISPATCH_BF16)
#undef SPARSEATTN_DISPATCH_BF16

// k08's bf16 twin widens its gathered rows to float32 in either build (no dot engine).
void k08_selected_gather_bf16(const InputsBf16& in, const Outputs& out) {
  if (active_isa() == Isa::avx512) return avx512::k08_selected_gather_bf16(in, out);
  return avx2::k08_selected_gather_bf16(in, out);
}

void set_bf16_force_widen(bool force) {
  g_forced.store(force ? kWiden : kNone, std::memory_order_relaxed);
}
bool bf16_force_widen() { return g_forced.load(std::memory_order_relaxed) == kWiden; }

void set_bf16_force_dot(bool force) {
  if (force && !cpu_has_avx512_bf16())
    throw InvalidArgument("bf16 engine", "dot", "this CPU has no AVX512-BF16");
  g_forced.store(force ? kDot : kNone, std::memory_order_relaxed);
}

bool bf16_dot_engine_selected() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced != kNone) return forced == kDot;
  return bf16_engine_choice().engine == Bf16Engine::dot;
}

Bf16EngineChoice choose_bf16_engine(std::optional<double> dot_vs_fma, const char* override) {
  Bf16EngineChoice choice;
  choice.dot_vs_fma = dot_vs_fma;
  std::string rates = "no AVX512-BF16";
  if (dot_vs_fma) {
    char text[64];
    std::snprintf(text, sizeof text, "vdpbf16ps %.2f× the FMA FLOP rate", *dot_vs_fma);
    rates = text;
  }
  const std::string value = override ? override : "";
  if (value.empty() || value == "auto") {
    choice.engine = dot_vs_fma && *dot_vs_fma >= kBf16DotMinRatio ? Bf16Engine::dot
                                                                  : Bf16Engine::widen;
    choice.reason = rates;
    return choice;
  }
  if (value != "dot" && value != "widen")
    throw InvalidArgument(kEngineVariable, value, "must be auto, dot or widen");
  if (value == "dot" && !dot_vs_fma)
    throw InvalidArgument(kEngineVariable, value,
                          "this CPU has no AVX512-BF16 (allowed here: auto or widen)");
  choice.engine = value == "dot" ? Bf16Engine::dot : Bf16Engine::widen;
  choice.overridden = true;
  choice.reason = std::string(kEngineVariable) + "; " + rates;
  return choice;
}

std::optional<double> measure_bf16_dot_vs_fma() {
  if (!cpu_has_avx512_bf16()) return std::nullopt;
  // ~2.6 ms per run of each on the slower machine (Intel Xeon: 0.539 ns per vdpbf16ps,
  // 0.135 ns per FMA, docs/benchmarks.md): 4× the FMA rounds for about the same time.
  constexpr int64_t kDotRounds = 400'000, kFmaRounds = 4 * kDotRounds;
  constexpr int kRepeats = 5;
  cpu_seconds_of(avx512::detail_bf16::dot_probe, kDotRounds / 4);  // warm up: clocks
  cpu_seconds_of(avx512::detail_bf16::fma_probe_one_thread, kFmaRounds / 4);
  double dot = 1e30, fma = 1e30;
  for (int r = 0; r < kRepeats; ++r) {  // interleaved, best of each
    dot = std::min(dot, cpu_seconds_of(avx512::detail_bf16::dot_probe, kDotRounds));
    fma = std::min(fma, cpu_seconds_of(avx512::detail_bf16::fma_probe_one_thread, kFmaRounds));
  }
  const double dot_flops = 12.0 * 64.0 * static_cast<double>(kDotRounds) / dot;
  const double fma_flops = 12.0 * 32.0 * static_cast<double>(kFmaRounds) / fma;
  return dot_flops / fma_flops;
}

const Bf16EngineChoice& bf16_engine_choice() {
  // A function-local static: initialized once, thread-safe; an exception (a bad variable)
  // leaves it uninitialized, so the next call throws again.
  static const Bf16EngineChoice choice = [] {
    const char* env = std::getenv(kEngineVariable);
    // Validate the value before spending ~30 ms on the probe.
    choose_bf16_engine(cpu_has_avx512_bf16() ? std::optional<double>(1.0) : std::nullopt, env);
    return choose_bf16_engine(measure_bf16_dot_vs_fma(), env);
  }();
  return choice;
}

bool amx_available() {
  return cpu_has_avx512_bf16() && cpu_has_amx_bf16() && amx_permission();
}

bool bf16_amx_engine_selected() {
  return g_forced.load(std::memory_order_relaxed) == kNone && !bf16_engine_choice().overridden &&
         amx_available();
}

const char* bf16_engine() {
  if (active_isa() == Isa::avx512 && bf16_amx_engine_selected()) return "amx";
  return active_isa() == Isa::avx512 && cpu_has_avx512_bf16() && bf16_dot_engine_selected()
             ? "dot"
             : "widen";
}

std::string bf16_engine_summary() {
  const Bf16EngineChoice& choice = bf16_engine_choice();  // first: a bad variable stops here
  if (active_isa() != Isa::avx512) return "widen (avx2 build)";
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced == kWiden) return "widen (set_bf16_force_widen)";
  if (forced == kDot) return "dot (set_bf16_force_dot)";
  if (bf16_amx_engine_selected()) return "amx (AMX-BF16; " + choice.reason + ")";
  return std::string(choice.engine == Bf16Engine::dot ? "dot" : "widen") + " (" + choice.reason +
         ")";
}

}  // namespace sparseattn::cpu
