// The selected kinds' part of materialize() (contract §3.16–§3.17), kept apart from the
// static kinds of materialize.cpp: validation of the index tables and the layouts they
// list, per batch element when the table has one per batch element.
#pragma once

#include "pattern/pattern.h"

namespace sparseattn::detail {

// Checks that need no sizes: the table's rank, K >= 1, entries >= -1, block sizes >= 1,
// duplicates only for selected. Throws FieldError naming the field.
void validate_selected_spec(const PatternSpec& s);
// Checks against the sizes: B_sel in {1, batch}, H_sel in {1, a divisor of num_heads},
// the row count, entries < seq_len_k (selected) or < ceil(seq_len_k / b_k) (blocks).
void validate_selected_sizes(const PatternSpec& s, const PatternSizes& z);
// Fills p.heads, p.batch_heads, p.selection and p.counts_repeats from the canonical spec.
void build_selected(const PatternSpec& s, const PatternSizes& z, Pattern& p);

}  // namespace sparseattn::detail
