// Which SIMD build of the CPU kernels runs: chosen at run time from the CPU's features,
// so one binary serves an AVX2-only machine and an AVX-512 one.
//
// Every forward kernel k01…k06 and k08 (and the FMA peak probe) is compiled twice from one
// source (isa_target.h): once for 256-bit vectors (AVX2 + FMA, the build's floor) and once for
// 512-bit vectors (AVX-512 F/BW/DQ/VL). The public entry points of kernels.h call the
// build active_isa() names. Both builds obey the same contract (kernels.h): they differ in
// summation order inside a row, so their outputs agree within kTolFloat32, not bit for bit;
// each is bit-identical across thread counts on its own.
//
// Choice, first match wins:
//   1. set_isa_override() (tests force each build the CPU can run);
//   2. the environment variable SPARSEATTN_CPU_ISA = avx2 | avx512 (read once);
//   3. the widest build the CPU supports (cpuid via __builtin_cpu_supports).
// Asking for a build the CPU cannot run is an error (InvalidArgument naming the variable),
// never a SIGILL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sparseattn::cpu {

enum class Isa { avx2, avx512 };

const char* isa_name(Isa isa);  // "avx2", "avx512"
// Parses "avx2" / "avx512"; throws InvalidArgument(arg, text, allowed values) otherwise.
Isa parse_isa(const std::string& text, const char* arg);

// Can this CPU (and OS: cpuid reports what XSAVE enabled) run the build?
bool isa_supported(Isa isa);
// The builds this CPU can run, narrowest first: tests loop over it.
std::vector<Isa> supported_isas();
// The build the kernels use now (see the order above). Throws InvalidArgument
// ("SPARSEATTN_CPU_ISA", value, ...) when the variable names a build this CPU cannot run.
Isa active_isa();
// Forces a build (nullopt: back to the environment / detection). Throws InvalidArgument
// ("isa", ...) for a build this CPU cannot run. Not for use while kernels run on other
// threads: set it between calls.
void set_isa_override(std::optional<Isa> isa);

// Does the CPU have AVX512-BF16 (vdpbf16ps: two bf16 products summed into one float32
// lane)? Independent of the active build: the bf16 kernels widen to float32 without it.
bool cpu_has_avx512_bf16();

// Does the CPU have AMX-TILE and AMX-BF16 (TDPBF16PS) with the tile state enabled by the
// OS in XCR0 (bits 17-18)? cpuid leaf 7: EDX bit 24 (AMX-TILE), bit 22 (AMX-BF16); Intel
// SDM vol. 1, ch. 18. Says nothing of the process's permission (amx_permission).
bool cpu_has_amx_bf16();
// Asks Linux for the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA),
// needed before the first AMX instruction of the process, else SIGILL) once per process,
// thread-safe; returns whether it was granted (false off Linux, or without
// cpu_has_amx_bf16(), without asking).
bool amx_permission();

// One line for `sparseattn impls` and benchmark contexts, e.g.
// "avx512 (supported: avx2 avx512; avx512_bf16: yes)".
std::string isa_summary();

// The FMA peak probe of the active build (fma_probe.cpp): `iterations` rounds of 12
// independent vector FMAs on every OpenMP thread; returns a value that depends on every
// result, so the work cannot be dropped. FLOPs done: threads · iterations · 12 · lanes · 2.
float fma_probe(int64_t iterations);
int fma_probe_lanes();  // floats per vector of the active build: 8 (avx2) or 16 (avx512)

// RAII: forces `isa` for a scope (tests).
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) { set_isa_override(isa); }
  ~ScopedIsa() { set_isa_override(std::nullopt); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;
};

}  // namespace sparseattn::cpu
