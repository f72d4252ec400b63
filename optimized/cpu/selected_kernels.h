// The selected-attention CPU kernels (contract §3.16, §7.9): k08 forward and kb03 backward,
// OpenMP, gathering each query's listed key and value rows; each in two twins from one
// source (a template over the input element type): float32 inputs, and bfloat16 inputs
// (q, k, v as bf16 bits, core/bfloat16.h) widened to float32 as they are read, float32
// arithmetic and accumulation after the loads in both. Registry entries in
// optimized/cpu/selected_entries.cpp (registry/cpu_kernels.def, backward_kernels.def).
//
// Contract of all four: reference a1_dense_masked / b1_dense_masked_grad — for the bf16
// twins evaluated on the same bf16-rounded q, k, v (docs/numerics.md) — at tolerance
// kTolFloat32, resp. kTolBfloat16 for the bf16 twins (core/numerics.h); serve `selected`
// (any B_sel, H_sel, duplicates once or count, causal, key padding) and grouped kv heads;
// -inf lse and o = 0 exactly for a row with no allowed key; bit-identical for any OpenMP
// thread count (every output element has one owner that sums in a fixed order). Shapes as
// optimized/cpu/kernels.h and grad_kernels.h, except that dk and dv have the H_kv heads of
// k and v (contract §2.7).
#pragma once

#include <cstdint>
#include <vector>

#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/kernels.h"
#include "optimized/cpu/kernels_bf16.h"

namespace sparseattn::cpu {

namespace selected {
// An input element's float32 value: a float as it is, bf16 bits widened exactly (they are
// a float32's top half). A shift and a bit cast, so that the loops reading k and v still
// vectorize.
inline float widen(float x) { return x; }
inline float widen(uint16_t h) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(h) << 16);
}
}  // namespace selected

// kb03's inputs with bfloat16 q, k, v (bit patterns, the shapes of GradInputs'); o, lse
// and dout stay float32 as the bf16 forward saved them. kb03 reads no score modifiers.
struct GradInputsBf16 {
  const uint16_t* q = nullptr;  // [batch, num_heads, seq_len_q, head_dim]
  const uint16_t* k = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim]
  const uint16_t* v = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim_v]
  const float* o = nullptr;     // [batch, num_heads, seq_len_q, head_dim_v]
  const float* lse = nullptr;   // [batch, num_heads, seq_len_q]
  const float* dout = nullptr;  // [batch, num_heads, seq_len_q, head_dim_v]
  AttentionShape shape;
  const Pattern* pattern = nullptr;
  float scale = 0.0f;
};

// k08 — token-level selected attention: for each (batch, kv head, query) the heads that
// share one list (the g query heads of the group when H_sel <= H_kv, else one) read each
// listed key row once for all of them, scores, softmax and P·V over the gathered rows.
void k08_selected_gather(const Inputs& in, const Outputs& out);
void k08_selected_gather_bf16(const InputsBf16& in, const Outputs& out);  // in.mods unread
bool k08_serves(const Pattern& pattern);

// kb03 — its backward: pass 1 per (batch, query head, query) recomputes P from the saved
// lse, D_i = <dO_i, o_i> and dq_i; pass 2 per (batch, kv head, key) walks the queries that
// selected the key (a transposed list built once, query heads and queries ascending) and
// sums dk_j, dv_j over every one of them.
void kb03_selected_gather_grad(const GradInputs& in, const GradOutputs& out);
void kb03_selected_gather_grad_bf16(const GradInputsBf16& in, const GradOutputs& out);
bool kb03_serves(const Pattern& pattern);

// The keys query i of batch element b reads from selection row `row` (Pattern::
// selection_row), as the kernels gather them: -1 skipped, j <= p under causal, padded
// keys dropped, nothing for a padded query; each distinct key once, in order of first
// listing, with its multiplicity (1 unless duplicates = count). `seen` is scratch of
// seq_len_k entries (any content; restored to -1 on return).
void selected_keys(const Pattern& pattern, int64_t b, int64_t row, int64_t i,
                   std::vector<int32_t>& keys, std::vector<float>& weights,
                   std::vector<int32_t>& seen);

}  // namespace sparseattn::cpu
