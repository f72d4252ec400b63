// Compatibility modes (contract §3.12): reproduce two peer behaviours exactly, so that
// HuggingFace's BigBird and Longformer outputs can be checked against sparseattn.
// docs/peers.md says what each peer does and where it is written.
//
// 1. HF-compatible BigBird. HF's block-sparse attention lists, per query block, key blocks
//    in a fixed order, and a block listed twice counts twice in the softmax: a deliberate
//    deviation from the set semantics of contract §2.2. The canonical layout (a set of
//    tiles) cannot hold a multiplicity, so this mode has its own small structure, a
//    BlockListing, read only by hf_listing_oracle() (float64, here) and the float32 CPU
//    kernel k07 (optimized/cpu/kernels.h). Nothing else sees it.
// 2. Longformer per-batch globals and global projections. Both are computed from the
//    ordinary pattern, one batch element at a time: batch element b uses the longformer
//    pattern with G = { i : global_mask[b, i] = 1 }, and a global query's row is
//    attention(q_global[i], k_global[A(i)], v_global[A(i)]) (contract §3.12) — the same
//    kernel run on the global tensors, its global rows kept.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn {

// HF's key-block listing: lists[h][qb] = the key blocks query block qb of head h lists,
// in HF's order, repeats kept. Every block has block_size tokens (n = num_blocks · b).
struct BlockListing {
  int64_t block_size = 0;
  int64_t num_blocks = 0;
  std::vector<std::vector<std::vector<int64_t>>> lists;  // [num_heads][num_blocks][...]
};

// Builds HF BigBird's listing (transformers `bigbird_block_sparse_attention`):
//   qb = 0 and qb = nb-1: every block 0 .. nb-1;
//   qb = 1:               0, 1, 2, nb-1, R[0][:];
//   qb = 2 .. nb-3:       0, qb-1, qb, qb+1, R[qb-1][:], nb-1;
//   qb = nb-2:            0, nb-3, nb-2, nb-1, R[nb-3][:].
// rand_attn: [num_heads or 1, nb - 2, r] key-block indices in [0, nb) (HF's `rand_attn`).
// Throws InvalidArgument("seq_len", ...) unless seq_len is a multiple of block_size with
// nb >= 5 (HF's own precondition for block-sparse attention), ("random_table", ...) for a
// wrong shape or an entry outside [0, nb).
BlockListing hf_bigbird_listing(int64_t seq_len, int64_t block_size, int64_t num_heads,
                                const Tensor<int64_t>& rand_attn);

// Batch element b of a tensor [B, ...] as a tensor [1, ...] (a copy), b in [0, B): the
// per-batch compatibility modes (and api/padding_align.h) run one element at a time.
template <class T>
Tensor<T> batch_slice(const Tensor<T>& x, int64_t b) {
  Tensor<T> y;
  y.shape = x.shape;
  y.shape[0] = 1;
  const int64_t per = x.numel() / x.dim(0);
  y.data.assign(x.data.begin() + b * per, x.data.begin() + (b + 1) * per);
  return y;
}

// The shapes a listing can be read with (q, k, v of listing.num_blocks * block_size tokens,
// listing.lists.size() heads, key padding [batch, seq_len]); throws InvalidArgument naming
// seq_len, num_heads or key_padding_mask shape. Shared by the forward and the gradient.
void validate_listing_inputs(const AttentionShape& s, const BlockListing& listing,
                             const Tensor<uint8_t>* key_padding_mask);

// Float64 attention over a listing, the definition of the HF-compatible mode:
//   lse_i = log Σ_{listed blocks c} Σ_{j in c, j real} exp(s_ij),
//   o_i   = Σ_{listed blocks c} Σ_{j in c, j real} exp(s_ij − lse_i) v_j,
// a padded query (key_padding_mask[b, i] = 0) is fully masked (o = 0, lse = -inf,
// contract §2.3–§2.4). q, k: [B, H, n, d]; v: [B, H, n, dv]; key_padding_mask [B, n] or
// nullptr. scale: nullptr = 1/sqrt(d). Throws InvalidArgument for mismatched shapes.
AttentionResult hf_listing_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const BlockListing& listing,
                                  const Tensor<uint8_t>* key_padding_mask, const double* scale);

// One attention implementation as the per-batch Longformer mode calls it: one batch
// element's q, k, v ([1, H, L, d]) and its pattern -> o [1, H, Lq, dv], lse [1, H, Lq].
using AttendFn = std::function<AttentionResult(const Tensor<double>& q, const Tensor<double>& k,
                                               const Tensor<double>& v, const Pattern& pattern)>;

// The optional Longformer inputs of contract §3.12.
struct LongformerGlobals {
  std::optional<Tensor<uint8_t>> global_mask;  // [B, L_k], 1 = global; else spec.global
  const Tensor<double>* q_global = nullptr;    // shaped like q, k, v; all three or none
  const Tensor<double>* k_global = nullptr;
  const Tensor<double>* v_global = nullptr;
};

// Throws InvalidArgument naming the flag, as longformer_compat does, for a kind other than
// longformer, projections not given together or not shaped like q, k, v (q4, k4, v4: their
// rank-4 shapes), a global mask not [B, L_k] or with entries other than 0/1, or a global
// mask given with spec.global.
void validate_longformer_globals(const AttentionShape& s, const Shape& q4, const Shape& k4,
                                 const Shape& v4, const PatternSpec& spec,
                                 const LongformerGlobals& globals);

// Batch element b under the Longformer mode: `spec` with the global set { j : global_mask[b,
// j] = 1 } (or spec.global) and key padding row b, materialized for [1, H, L_q, L_k]; and
// global_row[i] = 1 for each query row at a global position (i = p - (L_k - L_q), contract
// §3.1), the rows the global projections compute. The forward (longformer_compat) and its
// gradient (reference/backward/compat_grad.h) both read batch element b through this.
struct LongformerBatch {
  Pattern pattern;
  std::vector<uint8_t> global_row;  // [L_q]
};
LongformerBatch longformer_batch(const PatternSpec& spec, const LongformerGlobals& globals,
                                 int64_t b, const AttentionShape& s);

// Runs `attend` once per batch element b on the pattern `spec` (kind longformer) with
// global positions taken from global_mask row b (when given) and key padding row b, and,
// when global projections are given, runs it again on q_global/k_global/v_global and
// keeps that run's rows at the global positions. Returns o [B, H, Lq, dv], lse [B, H, Lq].
// Throws InvalidArgument naming "--global-mask" / "--q-global" ... for wrong shapes, a
// global mask entry other than 0/1, or a kind other than longformer.
AttentionResult longformer_compat(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const PatternSpec& spec,
                                  const LongformerGlobals& globals, const AttendFn& attend);

// Whether `globals` asks for anything beyond the ordinary pattern.
inline bool longformer_compat_requested(const LongformerGlobals& g) {
  return g.global_mask.has_value() || g.q_global != nullptr;
}

}  // namespace sparseattn
