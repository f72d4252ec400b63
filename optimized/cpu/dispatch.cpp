// The public CPU kernel entry points (kernels.h, grad_kernels.h): each forwards to the
// build of the kernel that active_isa() names (isa.h). The pattern checks (k0*_serves) do
// not depend on the build; the avx2 one answers for both.
#include "optimized/cpu/engine_probe.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/isa_kernels.h"
#include "optimized/cpu/selected_kernels.h"

namespace sparseattn::cpu {

#define SPARSEATTN_DISPATCH_FORWARD(kernel, serves)                                 \
  void kernel(const Inputs& in, const Outputs& out) {                               \
    if (active_isa() == Isa::avx512) return avx512::kernel(in, out);                \
    return avx2::kernel(in, out);                                                   \
  }                                                                                 \
  bool serves(const Pattern& pattern) { return avx2::serves(pattern); }

SPARSEATTN_CPU_FORWARD_KERNELS(SPARSEATTN_DISPATCH_FORWARD)
#undef SPARSEATTN_DISPATCH_FORWARD

void k08_selected_gather(const Inputs& in, const Outputs& out) {
  if (active_isa() == Isa::avx512) return avx512::k08_selected_gather(in, out);
  return avx2::k08_selected_gather(in, out);
}

void kb01_generic_tiles_grad(const GradInputs& in, const GradOutputs& out) {
  avx2::kb01_generic_tiles_grad(in, out);
}
bool kb01_serves(const Pattern& pattern) { return avx2::kb01_serves(pattern); }
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out) {
  avx2::kb02_generic_dq_lanes_grad(in, out);
}
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out,
                                int64_t lane_budget_bytes) {
  avx2::kb02_generic_dq_lanes_grad(in, out, lane_budget_bytes);
}
bool kb02_serves(const Pattern& pattern) { return avx2::kb02_serves(pattern); }

float fma_probe(int64_t iterations) {
  if (active_isa() == Isa::avx512) return avx512::fma_probe(iterations);
  return avx2::fma_probe(iterations);
}
EngineProbe engine_probe(int64_t head_dim, int64_t chunks, int repeats) {
  if (active_isa() == Isa::avx512) return avx512::engine_probe(head_dim, chunks, repeats);
  return avx2::engine_probe(head_dim, chunks, repeats);
}
int fma_probe_lanes() {
  return active_isa() == Isa::avx512 ? avx512::fma_probe_lanes() : avx2::fma_probe_lanes();
}

}  // namespace sparseattn::cpu
