// The optimized CPU ladder (float32, OpenMP, SIMD). Read in order: k01 -> k06
// (files optimized/cpu/k0*_*.cpp). Registry entries: registry/cpu_kernels.def.
//
// Common contract of every kernel:
//   reference: a1_dense_masked (the float64 oracle), tolerance kTolFloat32 from
//   core/numerics.h: |o - o_ref| <= 2e-5 + 2e-4·|o_ref| per element, lse likewise,
//   -inf lse (fully masked row) exactly where the oracle has it, never NaN.
//   q: [batch, num_heads, seq_len_q, head_dim]    float32, row-major
//   k: [batch, num_kv_heads, seq_len_k, head_dim]   (num_kv_heads divides num_heads)
//   v: [batch, num_kv_heads, seq_len_k, head_dim_v]
//   o: [batch, num_heads, seq_len_q, head_dim_v], lse: [batch, num_heads, seq_len_q]
//   scale: already resolved (1/sqrt(head_dim) by default), finite.
//   The pattern was materialized for these sizes (registry make_problem() checks it).
//   Outputs are bit-identical for any number of OpenMP threads.
//   Modern attention (contract §2.7–§2.9): every kernel k01 … k06 reads grouped kv heads
//   (num_kv_heads < num_heads) and in.mods (softcap, ALiBi slopes, sinks, float32); their
//   registry entries list kModern, so Kernel::run hands them such problems.
// Each kernel throws InvalidArgument("pattern", ...) for a pattern kind it does not serve.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::cpu {

// The score modifiers of contract §2.8–§2.9 in float32 (the entry converts ScoreMods); a
// default Mods is plain attention. Only the kernels whose registry entry lists the
// features read it (the others are never handed a problem that sets one: Kernel::run).
struct Mods {
  float softcap = 0.0f;               // c > 0; 0: no softcap
  const float* slopes = nullptr;      // ALiBi a[b, h] = slopes[b·slopes_batch_stride + h]
  int64_t slopes_batch_stride = 0;    // 0 for [H_q] slopes, H_q for [B, H_q]
  const float* sinks = nullptr;       // σ_h = sinks[h], [H_q]; nullptr: no sinks
  bool any() const { return softcap > 0.0f || slopes != nullptr || sinks != nullptr; }
};

// k and v hold shape.num_kv_heads heads; query head h reads kv head h / shape.group()
// (contract §2.7; num_kv_heads == num_heads for plain multi-head attention).
struct Inputs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  AttentionShape shape;
  const Pattern* pattern = nullptr;
  float scale = 0.0f;
  Mods mods;
};

struct Outputs {
  float* o = nullptr;    // [batch, num_heads, seq_len_q, head_dim_v]
  float* lse = nullptr;  // [batch, num_heads, seq_len_q]
};

// k01 — dense FlashAttention: tiles of 64 queries × chunks of 64 keys, online softmax.
// Serves `dense` (causal or not).
void k01_dense_flash(const Inputs& in, const Outputs& out);
bool k01_serves(const Pattern& pattern);

// k02 — sliding window: each query tile visits only the key span of its band
// (band_key_span), rows clipped exactly with band_steps. Serves `window` with dilation 1.
void k02_window_band(const Inputs& in, const Outputs& out);
bool k02_serves(const Pattern& pattern);

// k03 — dilated window: split keys and queries into `dilation` residue classes; each class
// is an undilated band over a strided sub-sequence. Serves `window` (any dilation).
void k03_window_dilated(const Inputs& in, const Outputs& out);
bool k03_serves(const Pattern& pattern);

// k04 — Longformer: band tiles plus a packed panel of global keys; global query rows are
// computed as full rows. Serves `longformer` (self-attention).
void k04_longformer(const Inputs& in, const Outputs& out);
bool k04_serves(const Pattern& pattern);

// k05 — BigBird block-sparse: walks each head's block table (HeadLayout tiles), full
// blocks unmasked, partial blocks by bitmask. Serves `bigbird`, `bigbird-etc`.
void k05_bigbird_blocks(const Inputs& in, const Outputs& out);
bool k05_serves(const Pattern& pattern);

// k06 — generic: k05's walk over any canonical HeadLayout, adjacent tiles coalesced into
// 64-key chunks. Serves every pattern kind (hierarchical, per-head, explicit, random, ...).
void k06_generic_tiles(const Inputs& in, const Outputs& out);
bool k06_serves(const Pattern& pattern);

}  // namespace sparseattn::cpu
