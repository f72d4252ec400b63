// `--padding-align valid` (contract §2.6): FlashAttention's alignment under right padding.
//
// By default (contract §2.4) positions come from the full lengths: query i sits at key
// position i + L_k − L_q whatever the padding. FlashAttention's variable-length interface,
// and the reference of its padded tests (`attention_ref` with `construct_local_mask`, in
// FlashAttention's own test suite), align each batch element by its own valid counts instead:
// query i of batch element b sits at i + n_b − m_b, where
//   n_b = the real keys of b: its key padding row must be n_b ones, then zeros;
//   m_b = its real queries: n_b when L_q = L_k (the self-attention reference passes the key
//         padding mask as the query padding mask too), L_q otherwise (the reference called
//         with no query padding mask: no query is padded).
// Batch element b is then exactly its own unpadded problem: queries [0, m_b), keys [0, n_b),
// aligned bottom-right (contract §3.1), global positions >= n_b dropped; rows i >= m_b are
// padded (o = 0, lse = −inf). With L_q = L_k that is p = i, the default alignment, so the
// flag changes nothing there; it moves rows only when L_q != L_k.
//
// The pattern stays the spec's (one Pattern for the batch); the functions below build each
// batch element's aligned pattern where a computation needs it: the oracle
// (convention_oracle), the gradient oracle, `attend`'s per-batch kernel runs, `mask`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "pattern/pattern.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "reference/compat.h"

namespace sparseattn::api {

struct CheckResult;  // api/check_result.h

// The valid counts of every batch element: keys[b] = n_b, queries[b] = m_b (above).
struct ValidCounts {
  std::vector<int64_t> keys;
  std::vector<int64_t> queries;
};

// Reads the counts from the pattern's key padding mask (already in keep polarity: 1 = real).
// Throws InvalidArgument("--padding-align", "valid", ...) without a key padding mask, or when
// seq_len_q != seq_len_k and the pattern (or a head of a per-head one) is not dense, window
// or longformer (random draws over the whole key sequence, contract §3.10; an explicit
// mask lists A(i) itself); InvalidArgument("--key-padding-mask", "batch element b: ...",
// ...) when a row is not right padding (a real key after a padded one).
ValidCounts valid_counts(const Pattern& pattern);

// Whether the valid alignment places any row differently from contract §2.4: seq_len_q !=
// seq_len_k and some batch element has padding. When false every computation may use
// `pattern` itself.
bool valid_alignment_moves(const Pattern& pattern, const ValidCounts& counts);

// Batch element b's pattern under the valid alignment: sizes {1, H, L_q, L_k}, an explicit
// mask ([L_q, L_k], or [H, L_q, L_k] for a per-head spec) with no key padding — padded keys
// are empty columns, padded queries (i >= m_b) empty rows. Only for seq_len_q != seq_len_k
// (valid_alignment_moves). Throws InvalidArgument("--padding-align") otherwise.
Pattern valid_batch_pattern(const Pattern& pattern, const ValidCounts& counts, int64_t b);

// Whether query i of batch element b is padded under the valid alignment: i >= m_b.
inline bool valid_query_padded(const ValidCounts& counts, int64_t b, int64_t i) {
  return i >= counts.queries[static_cast<size_t>(b)];
}

// `part` ([1, ...]) appended to `all` along dim 0 (an empty `all` becomes `part`; an empty
// `part` is skipped); batch_slice (reference/compat.h) is its inverse.
template <class T>
void append_batch(Tensor<T>& all, const Tensor<T>& part) {
  if (part.numel() == 0) return;
  if (all.numel() == 0) {
    all = part;
    return;
  }
  all.shape[0] += 1;
  all.data.insert(all.data.end(), part.data.begin(), part.data.end());
}

// One batch element's computation: q [1, H, L_q, D], k [1, H, L_k, D], v [1, H, L_k, Dv]
// and its pattern (batch 1).
using BatchAttend = std::function<AttentionResult(const Tensor<double>& q, const Tensor<double>& k,
                                                  const Tensor<double>& v, const Pattern& pattern)>;
using BatchGrad = std::function<GradientResult(const Tensor<double>& q, const Tensor<double>& k,
                                               const Tensor<double>& v, const Tensor<double>& dout,
                                               const Pattern& pattern)>;

// `attend` under the valid alignment: attend(q, k, v, pattern) itself when nothing moves
// (the counts are still validated), otherwise once per batch element on
// valid_batch_pattern, o [B, H, L_q, Dv] and lse [B, H, L_q] stitched. q/k/v rank 4 bhsd.
AttentionResult attend_valid_aligned(const Tensor<double>& q, const Tensor<double>& k,
                                     const Tensor<double>& v, const Pattern& pattern,
                                     const BatchAttend& attend);

// The same for a gradient: dq, dk, dv stitched (dout [B, H, L_q, Dv]).
GradientResult grad_valid_aligned(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Tensor<double>& dout,
                                  const Pattern& pattern, const BatchGrad& grad);

// The allowed mask [B, H, L_q, L_k] (1 = may attend) under the valid alignment: what
// `mask --padding-align valid` writes.
Tensor<uint8_t> valid_allowed_mask(const Pattern& pattern);

// [B * L_q]: 1 where query i of batch element b is padded under the valid alignment (what
// --padded-queries any leaves uncompared).
std::vector<uint8_t> valid_padded_rows(const Pattern& pattern);

// [B * H * L_q] in (b, h, i) order: 1 where the row has no allowed key under the valid
// alignment (padded queries included).
std::vector<uint8_t> valid_empty_rows(const Pattern& pattern);

// Restates every located tensor report's worst row (api/check_result.h: allowed,
// num_allowed, fully_masked, padded) under the valid alignment — a query row's keys, a key
// row's queries — where the reports were located against the spec's pattern.
void restate_worst_rows(CheckResult& result, const Pattern& pattern);

// The keys of row (b, h, i) under the valid alignment, ascending; none for a padded query
// (i >= m_b). Built from each distinct valid count's unpadded problem, materialized once
// (O(nnz) each, no explicit mask): what the cause probes (api/probes.cpp) read a row's keys
// from when the check runs under --padding-align valid, and the hypothesis "aligned to the
// valid counts" when it runs without. Throws what valid_counts throws.
using RowKeys = std::function<void(int64_t b, int64_t h, int64_t i, std::vector<int64_t>& keys)>;
RowKeys valid_row_keys(const Pattern& pattern);

// The cause named when a candidate matches the other alignment (contract §4.9): "causal
// aligned to the valid key count, as FlashAttention does with padding: pass --padding-align
// valid" (`to_valid`), or "... aligned to the full lengths ...: pass --padding-align full";
// "window" instead of "causal" for a pattern that is not causal.
std::string padding_align_cause(bool causal, bool to_valid);

}  // namespace sparseattn::api
