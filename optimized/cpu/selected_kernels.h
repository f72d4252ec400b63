// The selected-attention CPU kernels (contract §3.16, §7.9): k08 forward and kb03 backward,
// float32, OpenMP, gathering each query's listed key and value rows. Registry entries in
// optimized/cpu/selected_entries.cpp (registry/cpu_kernels.def, backward_kernels.def).
//
// Contract of both: reference a1_dense_masked / b1_dense_masked_grad, tolerance kTolFloat32
// (core/numerics.h); serve `selected` (any B_sel, H_sel, duplicates once or count, causal,
// key padding) and grouped kv heads; -inf lse and o = 0 exactly for a row with no allowed
// key; bit-identical for any OpenMP thread count (every output element has one owner that
// sums in a fixed order). Shapes as optimized/cpu/kernels.h and grad_kernels.h, except that
// dk and dv have the H_kv heads of k and v (contract §2.7).
#pragma once

#include <cstdint>
#include <vector>

#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/kernels.h"

namespace sparseattn::cpu {

// k08 — token-level selected attention: for each (batch, kv head, query) the heads that
// share one list (the g query heads of the group when H_sel <= H_kv, else one) read each
// listed key row once for all of them, scores, softmax and P·V over the gathered rows.
void k08_selected_gather(const Inputs& in, const Outputs& out);
bool k08_serves(const Pattern& pattern);

// kb03 — its backward: pass 1 per (batch, query head, query) recomputes P from the saved
// lse, D_i = <dO_i, o_i> and dq_i; pass 2 per (batch, kv head, key) walks the queries that
// selected the key (a transposed list built once, query heads and queries ascending) and
// sums dk_j, dv_j over every one of them.
void kb03_selected_gather_grad(const GradInputs& in, const GradOutputs& out);
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
