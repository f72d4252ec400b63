// The bfloat16-input CPU kernels: k01 … k06 with bf16 q, k, v and float32 accumulation.
// Registry entries cpu_k0*_bf16 (registry/cpu_kernels.def, optimized/cpu/entries.cpp).
//
// Common contract of every bf16 kernel:
//   reference: a1_dense_masked evaluated on the SAME bf16-rounded inputs (docs/numerics.md),
//   tolerance kTolBfloat16 from core/numerics.h: |o - o_ref| <= 1.6e-2 + 1.6e-2·|o_ref| per
//   element, lse likewise, -inf lse exactly where the oracle has it, never NaN.
//   q, k, v: the shapes of kernels.h, bfloat16 bit patterns (core/bfloat16.h), row-major.
//   o, lse: float32 (kernels.h's Outputs). scale: resolved, finite, applied in float32 to
//   the float32 scores (never folded into the bf16 q, which would round q·scale again).
//   Each kernel serves exactly what its float32 counterpart serves (the same k0*_serves)
//   and walks the pattern with the same code (the k0* bodies are templates over the engine).
//   Outputs are bit-identical for any number of OpenMP threads (per engine, see below).
//
// Engines (optimized/cpu/flash_tile_bf16.h, flash_tile_amx.h):
//   amx    — the dot engine with S = Q·Kᵀ and O += P·V on AMX tiles (TDPBF16PS), the same
//            panels, softmax and P rounding. Only in the avx512 build, only where
//            amx_available() (below), and taken before the others under the automatic
//            choice (bf16_amx_engine_selected).
//   dot    — S = Q·Kᵀ and O += P·V by vdpbf16ps (pairs of bf16 products summed into
//            float32 lanes), P rounded to bf16 for P·V as FlashAttention does; float32
//            online softmax. Only in the avx512 build, only on a CPU with AVX512-BF16.
//   widen  — bf16 widened to float32 when q and the key/value panels are packed, then the
//            float32 engine (flash_tile.h); P stays float32.
// The engines agree within kTolBfloat16, not bit for bit, so the engine is fixed for a
// process (contract §4.6): chosen once, at the first bf16 call, by choose_bf16_engine()
// below from the measured vdpbf16ps / FMA FLOP rates and SPARSEATTN_BF16_ENGINE, and
// reported (`sparseattn impls`, bench_cpu's JSON context). The avx2 build always widens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "optimized/cpu/kernels.h"

namespace sparseattn::cpu {

struct InputsBf16 {
  const uint16_t* q = nullptr;  // [batch, num_heads, seq_len_q, head_dim] bfloat16 bits
  const uint16_t* k = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim]
  const uint16_t* v = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim_v]
  AttentionShape shape;
  const Pattern* pattern = nullptr;
  float scale = 0.0f;
  Mods mods;  // float32, as in the float32 kernels: only q, k, v are rounded to bf16
};

// X(kernel, serves): the bf16 kernel of each float32 kernel, and the check they share.
#define SPARSEATTN_CPU_BF16_KERNELS(X)    \
  X(k01_dense_flash_bf16, k01_serves)     \
  X(k02_window_band_bf16, k02_serves)     \
  X(k03_window_dilated_bf16, k03_serves)  \
  X(k04_longformer_bf16, k04_serves)      \
  X(k05_bigbird_blocks_bf16, k05_serves)  \
  X(k06_generic_tiles_bf16, k06_serves)

#define SPARSEATTN_DECLARE_BF16(kernel, serves) \
  void kernel(const InputsBf16& in, const Outputs& out);

// The public entry points: forward to the active SIMD build (isa.h), which picks the engine.
// The first call, in either build, fixes the process's engine (bf16_engine_choice below);
// every call throws InvalidArgument("SPARSEATTN_BF16_ENGINE", ...) while that variable is bad.
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)

enum class Bf16Engine { dot, widen };

// The dot engine is chosen when vdpbf16ps reaches at least this fraction of the float32
// FMA's FLOP rate (one thread, 512-bit, 12 independent chains of each). The dot engine
// halves the multiply-add instructions of Q·Kᵀ and P·V but adds work the widening engine
// does not have (P rounded to bf16, V re-paired per chunk), so it wins only where
// vdpbf16ps keeps most of the FMA's FLOP rate. The two machines measured (docs/benchmarks.md,
// "Every target in one run") sit far on either side: Zen 5, ratio about 1.0 (inferred
// from the dot engine's speed-ups there, not read with this probe), dot engine 1.35–1.79×
// float32 at 2 threads (up to 2.41× on one thread, TUNING.md); an Intel Xeon (one 512-bit
// vdpbf16ps per two cycles against two FMAs per cycle), ratio 0.50, dot engine 0.65–0.78×
// float32 where widening gave 0.87–1.00×.
// 0.75 is the midpoint, 0.25 from each: the probe's run-to-run noise (a few %) cannot
// move either machine across it.
inline constexpr double kBf16DotMinRatio = 0.75;

struct Bf16EngineChoice {
  Bf16Engine engine = Bf16Engine::widen;
  // vdpbf16ps FLOP rate / FMA FLOP rate, one thread; nullopt: not measured (no AVX512-BF16).
  std::optional<double> dot_vs_fma;
  // Why, for reports: "vdpbf16ps 0.98× the FMA FLOP rate", "no AVX512-BF16",
  // "SPARSEATTN_BF16_ENGINE; vdpbf16ps 0.50× the FMA FLOP rate".
  std::string reason;
  // SPARSEATTN_BF16_ENGINE named the engine ("dot" or "widen"): the AMX engine stays off.
  bool overridden = false;
};

// The rule, pure (rates in, engine out; the tests feed it synthetic numbers).
//   dot_vs_fma: the measured ratio, nullopt on a CPU without AVX512-BF16.
//   override: SPARSEATTN_BF16_ENGINE's value; nullptr, "" or "auto": dot exactly when
//     dot_vs_fma >= kBf16DotMinRatio; "dot" or "widen": that engine.
// Throws InvalidArgument("SPARSEATTN_BF16_ENGINE", value, ...) for any other value, and for
// "dot" without AVX512-BF16 (a reproducibility override must not be silently ignored, as
// SPARSEATTN_CPU_ISA is not, isa.h).
Bf16EngineChoice choose_bf16_engine(std::optional<double> dot_vs_fma, const char* override);

// The vdpbf16ps / FMA FLOP rate ratio on the calling thread (fma_probe.cpp's detail_bf16
// probe: best of 5 interleaved runs of each, thread CPU time, ~30 ms in all); nullopt on a
// CPU without AVX512-BF16, where nothing runs.
std::optional<double> measure_bf16_dot_vs_fma();

// This process's choice: choose_bf16_engine(measure_bf16_dot_vs_fma(),
// getenv("SPARSEATTN_BF16_ENGINE")), made once at the first call (thread-safe) and fixed
// after. Throws what choose_bf16_engine throws (again at every call while the variable is bad).
const Bf16EngineChoice& bf16_engine_choice();

// The engine the bf16 kernels use now: "amx", "dot" or "widen" — the process's choice in
// the avx512 build, "widen" in the avx2 build or while a test forces widening.
const char* bf16_engine();
// The same with its reason, one line for `sparseattn impls` and benchmark contexts, e.g.
// "dot (vdpbf16ps 0.98× the FMA FLOP rate)", "widen (SPARSEATTN_BF16_ENGINE; no
// AVX512-BF16)", "widen (avx2 build)", "amx (AMX-BF16; vdpbf16ps 0.50× the FMA FLOP rate)".
std::string bf16_engine_summary();
// Forces the widening engine even where the dot engine was chosen (tests cover both on an
// AVX512-BF16 machine); false: back to the process's choice. Set between calls only.
void set_bf16_force_widen(bool force);
bool bf16_force_widen();
// Forces the dot engine where the process chose widening (so the tests run it on a CPU
// whose vdpbf16ps is slow); false: back to the process's choice. Throws
// InvalidArgument("bf16 engine", ...) on a CPU without AVX512-BF16. Set between calls only.
void set_bf16_force_dot(bool force);
// Does the avx512 build's with_bf16_engine() take the dot engine now (a test's force, else
// the process's choice)? The caller still checks cpu_has_avx512_bf16().
bool bf16_dot_engine_selected();

// Can the avx512 build's AMX engine run here (flash_tile_amx.h)? The CPU has AVX512-BF16
// and AMX-BF16 with the tile state enabled (isa.h: cpu_has_amx_bf16) and Linux granted this
// process the tile data (amx_permission, asked at the first call, cached). Fixed for a process.
bool amx_available();
// Does the avx512 build's with_bf16_engine() take the AMX engine now? amx_available(), no
// test forcing an engine (set_bf16_force_widen / set_bf16_force_dot: those run the other
// engines on an AMX machine) and SPARSEATTN_BF16_ENGINE unset or "auto" (a named engine
// is honoured). No rate is measured for AMX: on the one AMX machine measured (this
// round's Intel Xeon) TDPBF16PS ran at 3450 GFLOP per CPU-second against ~230 for float32
// FMAs (a stand-alone program, not in the repository; docs/benchmarks.md).
bool bf16_amx_engine_selected();

// RAII: forces the widening engine for a scope (tests).
class ScopedBf16Widen {
 public:
  ScopedBf16Widen() { set_bf16_force_widen(true); }
  ~ScopedBf16Widen() { set_bf16_force_widen(false); }
  ScopedBf16Widen(const ScopedBf16Widen&) = delete;
  ScopedBf16Widen& operator=(const ScopedBf16Widen&) = delete;
};

// RAII: forces the dot engine for a scope (tests; only where cpu_has_avx512_bf16()).
class ScopedBf16Dot {
 public:
  ScopedBf16Dot() { set_bf16_force_dot(true); }
  ~ScopedBf16Dot() { set_bf16_force_dot(false); }
  ScopedBf16Dot(const ScopedBf16Dot&) = delete;
  ScopedBf16Dot& operator=(const ScopedBf16Dot&) = delete;
};

namespace avx2 {
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)
}  // namespace avx2
namespace avx512 {
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)
}  // namespace avx512

#undef SPARSEATTN_DECLARE_BF16

}  // namespace sparseattn::cpu
