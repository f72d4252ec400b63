// The per-build entry points behind kernels.h and grad_kernels.h (isa.h): each forward
// kernel exists once per SIMD build, in namespace sparseattn::cpu::avx2 and ::avx512;
// dispatch.cpp calls the one active_isa() names; k08's two twins (selected_kernels.h) are
// built per ISA too, dispatched there and in dispatch_bf16.cpp. The backward kernels and
// k07 have the avx2 build only.
#pragma once

#include <cstdint>

#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/kernels.h"
#include "optimized/cpu/kernels_bf16.h"

// X(kernel, serves): every forward kernel built per ISA.
#define SPARSEATTN_CPU_FORWARD_KERNELS(X) \
  X(k01_dense_flash, k01_serves)          \
  X(k02_window_band, k02_serves)          \
  X(k03_window_dilated, k03_serves)       \
  X(k04_longformer, k04_serves)           \
  X(k05_bigbird_blocks, k05_serves)       \
  X(k06_generic_tiles, k06_serves)

#define SPARSEATTN_DECLARE_FORWARD(kernel, serves)            \
  void kernel(const Inputs& in, const Outputs& out);          \
  bool serves(const Pattern& pattern);

namespace sparseattn::cpu::avx2 {
SPARSEATTN_CPU_FORWARD_KERNELS(SPARSEATTN_DECLARE_FORWARD)
void kb01_generic_tiles_grad(const GradInputs& in, const GradOutputs& out);
bool kb01_serves(const Pattern& pattern);
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out);
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out,
                                int64_t lane_budget_bytes);
bool kb02_serves(const Pattern& pattern);
float fma_probe(int64_t iterations);
int fma_probe_lanes();
}  // namespace sparseattn::cpu::avx2

namespace sparseattn::cpu::avx512 {
SPARSEATTN_CPU_FORWARD_KERNELS(SPARSEATTN_DECLARE_FORWARD)
float fma_probe(int64_t iterations);
int fma_probe_lanes();
// The bf16 engine's rate probe (fma_probe.cpp; call only where cpu_has_avx512_bf16()):
// `iterations` rounds of 12 independent chains on the calling thread, of 512-bit FMAs
// (12 · 32 FLOP per round) and of vdpbf16ps (12 · 64 FLOP per round).
namespace detail_bf16 {
float fma_probe_one_thread(int64_t iterations);
float dot_probe(int64_t iterations);
}  // namespace detail_bf16
}  // namespace sparseattn::cpu::avx512

// k08, token-level selected attention, and its bf16 twin (selected_kernels.h).
#define SPARSEATTN_DECLARE_SELECTED                                 \
  void k08_selected_gather(const Inputs& in, const Outputs& out); \
  void k08_selected_gather_bf16(const InputsBf16& in, const Outputs& out);

namespace sparseattn::cpu::avx2 {
SPARSEATTN_DECLARE_SELECTED
}  // namespace sparseattn::cpu::avx2
namespace sparseattn::cpu::avx512 {
SPARSEATTN_DECLARE_SELECTED
}  // namespace sparseattn::cpu::avx512

#undef SPARSEATTN_DECLARE_SELECTED
#undef SPARSEATTN_DECLARE_FORWARD
