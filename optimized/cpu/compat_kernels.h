// Optimized CPU kernels of the compatibility modes (contract §3.12), outside the registry:
// they read a BlockListing (reference/compat.h), not a canonical Pattern.
//
// Contract (as every CPU kernel, optimized/cpu/kernels.h): float32 in and out,
//   reference: hf_listing_oracle (float64), tolerance kTolFloat32 from core/numerics.h,
//   -inf lse exactly where the oracle has it, never NaN, outputs bit-identical for any
//   number of OpenMP threads (each row is computed by one thread in a fixed order).
#pragma once

#include <cstdint>

#include "core/tensor.h"
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

}  // namespace sparseattn::cpu
