// Optimized CPU kernels of the compatibility modes (contract §3.12): they read a
// BlockListing (reference/compat.h), not a canonical layout. k07 is the registry entry
// cpu_k07_hf_listing (registry/cpu_kernels.def, optimized/cpu/entries.cpp): the listing it
// reads is HF's listing of the pattern's own ITC draws (Pattern::random_draws, HF's
// rand_attn layout).
//
// Contract (as every CPU kernel, optimized/cpu/kernels.h): float32 in and out,
//   reference: hf_listing_oracle (float64), tolerance kTolFloat32 from core/numerics.h,
//   -inf lse exactly where the oracle has it, never NaN, outputs bit-identical for any
//   number of OpenMP threads (each row is computed by one thread in a fixed order).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "pattern/pattern.h"
#include "reference/compat.h"

namespace sparseattn::cpu {

// k07 — HF BigBird listing: per query row, an online softmax (FlashAttention's running
// max m and sum l) over the listed key blocks in listing order, a block listed twice
// visited twice. Rows in parallel (OpenMP over batch · heads · rows).
//   q, k: [batch, num_heads, n, head_dim]; v: [batch, num_heads, n, head_dim_v], float32
//   key_padding_mask: [batch, n], nonzero = real, or nullptr
//   o: [batch, num_heads, n, head_dim_v]; lse: [batch, num_heads, n]
// Throws InvalidArgument when shape and listing disagree (hf_listing_oracle's checks).
void k07_hf_listing(const float* q, const float* k, const float* v, const AttentionShape& shape,
                    const BlockListing& listing, const uint8_t* key_padding_mask, float scale,
                    float* o, float* lse);

// Whether HF can list `pattern`: bigbird, seq_len_q = seq_len_k a whole number of blocks,
// at least 5 blocks (HF's own precondition), every random draw made (no shortfall).
bool k07_lists(const Pattern& pattern);
// What the registry entry serves: a listable pattern whose listing names no block twice
// in any query block's list. Its listing's sums are then contract §2.2's sets, and the
// entry matches a1_dense_masked; `--compat hf-bigbird` runs it on every listable pattern,
// repeats counted (contract §3.12).
bool k07_serves(const Pattern& pattern);
// HF's listing of a listable pattern (hf_bigbird_listing of its random_draws). Throws
// InvalidArgument("pattern", ...) naming cpu_k07_hf_listing for a pattern it cannot list.
BlockListing k07_listing(const Pattern& pattern);

}  // namespace sparseattn::cpu
