// Run-time choice of the CPU kernels' SIMD build (isa.h).
#include "optimized/cpu/isa.h"

#include <cpuid.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.h"

namespace sparseattn::cpu {
namespace {

// -1: no override; otherwise the Isa's value.
std::atomic<int> g_override{-1};

const char* kAllowed = "avx2 or avx512";

// "avx2, avx512": what the refusals say this CPU supports (supported_isas is declared in isa.h).
std::string supported_list() {
  std::string s;
  for (Isa isa : supported_isas()) s += std::string(s.empty() ? "" : ", ") + isa_name(isa);
  return s.empty() ? "neither" : s;
}

}  // namespace

const char* isa_name(Isa isa) { return isa == Isa::avx512 ? "avx512" : "avx2"; }

Isa parse_isa(const std::string& text, const char* arg) {
  if (text == "avx2") return Isa::avx2;
  if (text == "avx512") return Isa::avx512;
  throw InvalidArgument(arg, text, std::string("must be ") + kAllowed);
}

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == Isa::avx2) return avx2;
  return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> list;
  for (Isa isa : {Isa::avx2, Isa::avx512})
    if (isa_supported(isa)) list.push_back(isa);
  return list;
}

bool cpu_has_avx512_bf16() {
  __builtin_cpu_init();
  return isa_supported(Isa::avx512) && __builtin_cpu_supports("avx512bf16");
}

bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c >> 27 & 1u) == 0) return false;  // OSXSAVE
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  const bool tile = (d >> 24 & 1u) != 0, bf16 = (d >> 22 & 1u) != 0;
  if (!tile || !bf16) return false;
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // XCR0: what XSAVE manages
  return (lo >> 17 & 3u) == 3u;  // XTILECFG (17) and XTILEDATA (18)
}

bool amx_permission() {
  // A function-local static: initialised once, thread-safe (C++11), the answer cached.
  static const bool granted = [] {
    if (!cpu_has_amx_bf16()) return false;
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023;  // <asm/prctl.h>, Linux 5.16
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return granted;
}

Isa active_isa() {
  const int forced = g_override.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<Isa>(forced);
  // Read once: the environment does not change under a running process.
  static const std::optional<Isa> from_env = []() -> std::optional<Isa> {
    const char* env = std::getenv("SPARSEATTN_CPU_ISA");
    if (env == nullptr || *env == '\0') return std::nullopt;
    return parse_isa(env, "SPARSEATTN_CPU_ISA");
  }();
  if (from_env) {
    if (!isa_supported(*from_env))
      throw InvalidArgument("SPARSEATTN_CPU_ISA", isa_name(*from_env),
                            "this CPU does not support it (it supports: " + supported_list() + ")");
    return *from_env;
  }
  return isa_supported(Isa::avx512) ? Isa::avx512 : Isa::avx2;
}

void set_isa_override(std::optional<Isa> isa) {
  if (isa && !isa_supported(*isa))
    throw InvalidArgument("isa", isa_name(*isa),
                          "this CPU does not support it (it supports: " + supported_list() + ")");
  g_override.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

std::string isa_summary() {
  std::string s = isa_name(active_isa());
  s += " (supported:";
  for (Isa isa : supported_isas()) s += std::string(" ") + isa_name(isa);
  s += "; avx512_bf16: ";
  s += cpu_has_avx512_bf16() ? "yes" : "no";
  return s + ")";
}

}  // namespace sparseattn::cpu
