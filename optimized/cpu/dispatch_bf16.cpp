// The public bf16 kernel entry points (kernels_bf16.h): each forwards to the build of the
// kernel that active_isa() names (isa.h); inside the avx512 build, with_bf16_engine()
// (flash_tile_bf16.h) picks the dot engine only on a CPU with AVX512-BF16.
#include <atomic>

#include "optimized/cpu/isa.h"
#include "optimized/cpu/isa_kernels.h"
#include "optimized/cpu/kernels_bf16.h"
#include "optimized/cpu/selected_kernels.h"

namespace sparseattn::cpu {
namespace {
std::atomic<bool> g_force_widen{false};
}  // namespace

#define SPARSEATTN_DISPATCH_BF16(kernel, serves)                                    \
  void kernel(const InputsBf16& in, const Outputs& out) {                           \
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

void set_bf16_force_widen(bool force) { g_force_widen.store(force, std::memory_order_relaxed); }
bool bf16_force_widen() { return g_force_widen.load(std::memory_order_relaxed); }

const char* bf16_engine() {
  return active_isa() == Isa::avx512 && cpu_has_avx512_bf16() && !bf16_force_widen() ? "dot"
                                                                                      : "widen";
}

}  // namespace sparseattn::cpu
