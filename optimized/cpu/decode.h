// k09 — decoding against a KV cache (contract §2.11–§2.12): a few queries per element
// (L_q <= 16 is its target; any L_q is correct) against a long cache, read in place.
// Registry entries cpu_k09_decode (float32) and cpu_k09_decode_bf16 (registry/
// cpu_kernels.def, optimized/cpu/entries.cpp).
//
// Contract (as every CPU kernel, kernels.h): reference a1_dense_masked through the layout
// walk (api/layout_walk.h), tolerance kTolFloat32 (bf16: kTolBfloat16 on the bf16-rounded
// inputs), −inf lse exactly where the oracle has it, never NaN, bit-identical for any
// number of OpenMP threads (within one SIMD build).
//   q:   [batch, num_heads, seq_len_q, head_dim]
//   k, v with a cache (DecodeInputs::cache set): the contiguous cache [batch, num_kv_heads,
//        seq_len_cache, head_dim | head_dim_v] or the page pools [num_pages, num_kv_heads,
//        page_size, head_dim | head_dim_v] read through the block table; element b's keys
//        are 0 … n_b − 1, n_b = cache_seqlens[b]. Slots past n_b are never read.
//   k, v without a cache: [batch, num_kv_heads, seq_len_k, d]; every element has n_b = L_k.
//   o:   [batch, num_heads, seq_len_q, head_dim_v], lse [batch, num_heads, seq_len_q].
// Query i of element b sits at p = i + n_b − L_q (contract §2.11); its keys are the spec's
// for (L_q, n_b): dense, window (left/right reach, dilation; band_of) or chunked (§3.14),
// causal or not — one arithmetic progression of keys per row (DecodeRows).
//
// How: one work item is (element b, kv head, split of keys). The g query heads of the kv
// head and its L_q queries are the item's rows, so each K/V row of the split is read once
// for all of them. A split is a fixed run of `split_keys` keys of the rows' union span,
// never chosen from the thread count: each keeps its own running max, sum and accumulator
// per row (online softmax, partials in a scratch array) and a second pass merges the splits
// of a row in order by their log-sum-exp; the sink σ_h (§2.9) enters there, once. So two
// threads share one long sequence and the result does not depend on which thread ran what.
#pragma once

#include <cstdint>

#include "core/seq_layout.h"
#include "optimized/cpu/kernels.h"

namespace sparseattn::cpu {

// Keys per split when DecodeInputs::split_keys is 0: 256 keys of K and V (128 KB at
// head_dim 128 in float32) per item, enough to hide the merge, small enough that a
// 32k-key cache gives 128 items per kv head to share.
inline constexpr int64_t kDecodeSplitKeys = 256;
// The most floats the per-split partials (max, sum, accumulator of every row) may take,
// 64 MiB: past it the split doubles (k09_decode.cpp). A decode step is far below it
// (L_q 1, g 4, head_dim 128, 32768 keys: 128 splits × 8 kv heads × 4 rows × 130 floats).
inline constexpr int64_t kDecodePartialBudget = int64_t{1} << 24;

// T: float or uint16_t (bfloat16 bits, core/bfloat16.h).
template <class T>
struct DecodeInputsT {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  AttentionShape shape;             // seq_len_k: the capacity (cache) or L_k (plain)
  const KvCache* cache = nullptr;   // nullptr: plain inputs, every element filled to L_k
  const Pattern* pattern = nullptr;  // dense, window or chunked (k09_serves)
  float scale = 0.0f;
  Mods mods;
  // Keys per split; 0: kDecodeSplitKeys, doubled while the partials exceed
  // kDecodePartialBudget (tests use small ones; a given value is used as it is).
  int64_t split_keys = 0;
};
using DecodeInputs = DecodeInputsT<float>;
using DecodeInputsBf16 = DecodeInputsT<uint16_t>;

void k09_decode(const DecodeInputs& in, const Outputs& out);
// bf16 q, k, v widened to float32 as a block is read; float32 arithmetic otherwise.
void k09_decode_bf16(const DecodeInputsBf16& in, const Outputs& out);
// dense, window (any dilation, left/right) and chunked, causal or not; no per-head
// mixture, no key padding (a cache problem has none; contract §2.11).
bool k09_serves(const Pattern& pattern);

namespace avx2 {
void k09_decode(const DecodeInputs& in, const Outputs& out);
void k09_decode_bf16(const DecodeInputsBf16& in, const Outputs& out);
}  // namespace avx2
namespace avx512 {
void k09_decode(const DecodeInputs& in, const Outputs& out);
void k09_decode_bf16(const DecodeInputsBf16& in, const Outputs& out);
}  // namespace avx512

}  // namespace sparseattn::cpu
