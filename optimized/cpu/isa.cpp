// Run-time choice of the CPU kernels' SIMD build (isa.h).
#include "optimized/cpu/isa.h"

#include <atomic>
#include <cstdlib>

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
