// Input checks shared by every attention entry point (reference steps, the registry's
// make_problem, the CLI). One place, so every implementation rejects the same inputs
// with the same message.
#pragma once

#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn {

// Validates q/k/v shapes (attention_shape) and that `pattern` was materialized for the
// same num_heads, seq_len_q, seq_len_k (and batch when it has a key padding mask).
// k and v may have fewer heads than q only when `kv_heads` is `grouped` (contract §2.7).
// Returns the sizes. Throws InvalidArgument naming the mismatching argument.
AttentionShape validate_attention(const Shape& q, const Shape& k, const Shape& v,
                                  const Pattern& pattern, KvHeads kv_heads = KvHeads::equal);

}  // namespace sparseattn
