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
// Engines (optimized/cpu/flash_tile_bf16.h), chosen per call:
//   dot    — the avx512 build on a CPU with AVX512-BF16: S = Q·Kᵀ and O += P·V by vdpbf16ps
//            (pairs of bf16 products summed into float32 lanes), P rounded to bf16 for P·V
//            as FlashAttention does; float32 online softmax.
//   widen  — everywhere else (the avx2 build, or an AVX-512 CPU without BF16): bf16 widened
//            to float32 when q and the key/value panels are packed, then the float32
//            engine (flash_tile.h); P stays float32.
// The two engines agree within kTolBfloat16, not bit for bit.
#pragma once

#include <cstdint>

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
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)

// The engine the bf16 kernels use now: "dot" or "widen" (see above).
const char* bf16_engine();
// Forces the widening engine even where the dot engine could run (tests cover both on an
// AVX512-BF16 machine); false: back to the automatic choice. Set between calls only.
void set_bf16_force_widen(bool force);
bool bf16_force_widen();

// RAII: forces the widening engine for a scope (tests).
class ScopedBf16Widen {
 public:
  ScopedBf16Widen() { set_bf16_force_widen(true); }
  ~ScopedBf16Widen() { set_bf16_force_widen(false); }
  ScopedBf16Widen(const ScopedBf16Widen&) = delete;
  ScopedBf16Widen& operator=(const ScopedBf16Widen&) = delete;
};

namespace avx2 {
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)
}  // namespace avx2
namespace avx512 {
SPARSEATTN_CPU_BF16_KERNELS(SPARSEATTN_DECLARE_BF16)
}  // namespace avx512

#undef SPARSEATTN_DECLARE_BF16

}  // namespace sparseattn::cpu
