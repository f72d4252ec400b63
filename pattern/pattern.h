// Pattern: a PatternSpec materialized for concrete sizes — the object every kernel, the
// oracle, the CLI and the graph module take. Built once by materialize(); read-only after.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/field.h"
#include "core/tensor.h"
#include "pattern/band.h"
#include "pattern/layout.h"
#include "pattern/spec.h"

namespace sparseattn {

struct PatternSizes {
  int64_t batch = 1;      // only used to check key_padding_mask [batch, seq_len_k]
  int64_t num_heads = 1;
  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;  // == seq_len_q for self-attention
};

struct Pattern {
  // The canonical spec (canonicalize()): every parameter within what the sequence needs,
  // so nothing reading it can meet an out-of-range value. Equivalent to the spec given.
  PatternSpec spec;
  // The parameters canonicalize() changed, e.g. "window 9223372036854775807 -> 15";
  // empty when none. `info` prints it.
  std::vector<std::string> clamped;
  PatternSizes sizes;

  // [num_heads]; heads with identical patterns share one layout.
  std::vector<std::shared_ptr<const HeadLayout>> heads;

  // Random draws actually made, for reporting and for the graph/GPU modules (they read
  // it, never redraw). bigbird: [num_heads, rows, num_random_blocks] key-block indices,
  // rows = nb - 2 (ITC, query blocks 1..nb-2) or nb (ETC); -1 marks a draw that could
  // not be made because fewer blocks remained (contract §3: take all that remain).
  // random: [num_heads, seq_len_q, num_random] key indices, -1 likewise. Empty otherwise.
  Tensor<int64_t> random_draws;
  int64_t random_shortfall = 0;  // number of -1 entries in random_draws

  // selected, selected-blocks (contract §3.16–§3.17): the index table as given (int64,
  // [B_sel, H_sel, rows, K]); empty for every other kind. Query head h reads row
  // selection_row(h) of it.
  Tensor<int64_t> selection;
  // [B_sel * num_heads] layouts, batch-major, when the table has B_sel > 1 (each batch
  // element its own lists, contract §3.16); empty otherwise, and then `heads` holds for
  // every batch element. heads == batch element 0's layouts either way.
  std::vector<std::shared_ptr<const HeadLayout>> batch_heads;
  // selected with duplicates = count and at least one key listed twice in a row (where
  // causal keeps it): the softmax weighs key j by multiplicity(), not 0/1.
  bool counts_repeats = false;

  const HeadLayout& head(int64_t h) const { return *heads.at(static_cast<size_t>(h)); }
  // The layout of head h for batch element b: head(h) unless the lists depend on b.
  const HeadLayout& head_of(int64_t b, int64_t h) const {
    return batch_heads.empty() ? head(h)
                               : *batch_heads.at(static_cast<size_t>(b * sizes.num_heads + h));
  }
  // Whether the pattern differs by batch element (B_sel > 1) or weighs repeats: only the
  // kernels listing the feature kSelection (registry.h) read those.
  bool needs_selection_kernel() const { return !batch_heads.empty() || counts_repeats; }
  // The selection row query head h reads: 0 (H_sel = 1), h (H_sel = H_q) or h / g (H_sel =
  // H_kv, g = H_q / H_sel, contract §2.7). Only for selected kinds.
  int64_t selection_row(int64_t h) const;
  // contract §3.16: how often key j is in A(i) of (b, h): 0 when not allowed, else 1, or
  // under duplicates = count the number of times row i lists it. O(K) for counted
  // patterns, allowed() otherwise.
  int64_t multiplicity(int64_t b, int64_t h, int64_t i, int64_t j) const;
  bool has_key_padding() const { return spec.key_padding_mask.has_value(); }

  // contract §2 key padding: key j of batch b is real; query i of batch b is real (it sits
  // at key position i + seq_len_k - seq_len_q; a position outside [0, seq_len_k) has no
  // padding entry and counts as real).
  bool key_valid(int64_t b, int64_t j) const;
  bool query_valid(int64_t b, int64_t i) const;

  // The whole predicate: layout of head h, and both ends real.
  bool allowed(int64_t b, int64_t h, int64_t i, int64_t j) const;

  // Band parameters of window-like kinds (window, longformer, random); the band part of
  // their pattern. Throws InvalidArgument for kinds without a band.
  BandParams band() const;
};

// The band of a window-like spec for these sizes: left = right = window, or the
// (window_left, window_right) pair when given, -1 (unbounded) as max(seq_len_q, seq_len_k)
// steps; dilation and causal as given. The spec's kind is not checked (Pattern::band() does).
BandParams band_of(const PatternSpec& spec, int64_t seq_len_q, int64_t seq_len_k);

// The checks on `spec` that need no sizes (contract §5): every range (window >= 0,
// dilation >= 1, block_size >= 1, counts >= 0, global positions >= 0), every field set for a
// kind that does not read it (a window given to bigbird), every field a kind needs
// (hierarchical: segment_ids; explicit: mask), and each head of a per-head spec. Throws
// FieldError (core/field.h) naming the field, and for a per-head spec its head; a front end
// spells it (`--window`, `heads[3].window`, `window=`). materialize() calls it first; front
// ends call it as soon as a spec is built, before any file is read or size is known.
void validate_spec(const PatternSpec& spec);

// Materializes `spec` for `sizes`. Validates every parameter against contract §5 and throws
// FieldError naming it (validate_spec(), then window < 0, dilation < 1, block_size < 1, global positions
// out of range, random table shape or entries out of range, mask shape, segment ids not
// non-decreasing or of the wrong length, key padding shape, num_heads/seq_len < 1, block
// patterns with seq_len_q != seq_len_k).
// Cost: O(nnz) time for token-level kinds (plus O(seq_len_q * seq_len_k) for explicit
// masks); O(tiles) for block kinds.
Pattern materialize(const PatternSpec& spec, const PatternSizes& sizes);

// contract §3 "Parameters beyond the sequence": the spec with every parameter clamped to
// the equivalent value for `sizes` (dilation and window against N = max(seq_len_q,
// seq_len_k), block_size against the sequence, num_random against seq_len_k,
// num_random_blocks against the number of blocks, tile against max(N, 64); per-head specs
// each). The allowed set and every random draw are those of `spec`; docs/patterns.md
// derives each equivalence. Values that validation refuses (window < 0, ...) are left
// as they are. materialize() calls it, so Pattern::spec is always canonical.
PatternSpec canonicalize(const PatternSpec& spec, const PatternSizes& sizes);
void canonicalize_in_place(PatternSpec& spec, const PatternSizes& sizes);

// Counts over all heads, key padding ignored (it depends on the batch).
struct PatternStats {
  int64_t nnz = 0;                // allowed (head, query, key) triples
  int64_t dense_pairs = 0;        // num_heads * seq_len_q * seq_len_k
  double density = 0.0;           // nnz / dense_pairs
  int64_t row_min = 0, row_max = 0;  // keys per query row, over heads and rows
  double row_mean = 0.0;
  int64_t empty_rows = 0;         // rows with no allowed key (o = 0, lse = -inf)
  int64_t num_tiles = 0, full_tiles = 0;
};
PatternStats pattern_stats(const Pattern& pattern);

// FLOPs of attention restricted to the pattern, per batch element: 2 for q·k and 2 for
// p·v per allowed pair and head-dimension element — 4 · nnz · head_dim when
// head_dim_v == head_dim (the FlashAttention paper's convention, §3 / App. B).
double attention_flops(const PatternStats& stats, int64_t head_dim, int64_t head_dim_v);

}  // namespace sparseattn
