// `info` under a sequence layout (contract §2.10–§2.11): what a packed batch or a filled
// cache costs, read off each sequence's own pattern (api/layout_walk.h sequence_pattern) —
// the counts of api/info_result.h summed over the sequences.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/layout_walk.h"
#include "pattern/spec.h"

namespace sparseattn::api {

// One sequence (a packed batch's) or batch element (a cache's).
struct LayoutInfoSequence {
  int64_t seq_len_q = 0, seq_len_k = 0;
  int64_t nnz = 0;            // allowed (head, query, key) triples
  int64_t empty_rows = 0;     // (head, query) rows without a key: o = 0 (contract §2.3)
  double flops = 0.0;         // 4 · nnz · head_dim (attention_flops, head_dim_v = head_dim)
  double dense_flops = 0.0;   // 4 · H · seq_len_q · seq_len_k · head_dim
};

struct LayoutInfo {
  std::string layout;         // "varlen" (cu_seqlens) or "kv_cache" (cache_seqlens)
  std::string pattern;        // describe(spec)
  int64_t num_heads = 0, head_dim = 0;
  int64_t total_q = 0, total_k = 0;  // a cache: B · L_q and Σ cache_seqlens
  int64_t nnz = 0, empty_rows = 0;
  double flops = 0.0, dense_flops = 0.0;  // sums over the sequences
  // varlen: H · total_q · total_k, the pairs the same batch spans as one problem with an
  // explicit block-diagonal mask (what a mask-based kernel tiles over); 0 for a cache.
  int64_t mask_pairs = 0;
  std::vector<LayoutInfoSequence> sequences;
};

// The counts of `spec` (validate_spec, require_layout_spec) over `layout`: a packed batch
// (validated against its own totals, validate_varlen), or a cache with `seq_len_q` (>= 1)
// queries per element against cache_seqlens[b] keys (each >= 0). A paged cache is refused
// (FieldError naming block_table: paging moves keys but changes no count). num_heads,
// head_dim >= 1. The CLI's `info` and Python's Pattern.info both call this. Throws
// InvalidArgument naming --num-heads, --head-dim, --seq-len (the Python layer checks those
// first, naming its keywords), or FieldError naming cu_seqlens_q/_k, cache_seqlens,
// block_table or a pattern field.
LayoutInfo layout_info(const PatternSpec& spec, int64_t num_heads, int64_t head_dim,
                       const SeqLayout& layout, int64_t seq_len_q);

// layout, pattern, num_heads, head_dim, num_sequences, total_q, total_k, nnz, empty_rows,
// flops, dense_flops, flops_fraction (flops / dense_flops), mask_pairs and
// mask_flops_fraction (nnz / mask_pairs; varlen only), sequences [{seq_len_q, seq_len_k,
// nnz, empty_rows, flops, density}].
nlohmann::json layout_info_json(const LayoutInfo& r);

// The table `sparseattn info` prints: the totals, one "name  value" line each, then one line
// per sequence. "\n"-terminated.
std::string layout_info_text(const LayoutInfo& r);

}  // namespace sparseattn::api
