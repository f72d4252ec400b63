// The allowed mask under the conventions (contract §1.6, §2.6, §3.12): what `sparseattn
// mask` writes and Pattern.mask() returns, one function for both front ends.
#pragma once

#include <cstdint>

#include "api/conventions.h"
#include "core/field.h"
#include "core/tensor.h"
#include "pattern/pattern.h"
#include "pattern/spec.h"

namespace sparseattn::api {

// The mask [batch, num_heads, seq_len_q, seq_len_k], 1 = may attend: each head's canonical
// layout with the key padding applied (padded keys and padded query rows attend nothing),
// after the conventions `conv` (key padding polarity, causal alignment; under the valid
// padding alignment each batch element placed by its own valid key count). `global_mask`
// ([batch, seq_len_k] or [seq_len_k], 1 = global token; may be null): one longformer pattern
// per batch element, its global tokens that row's (spec must be longformer without global
// positions; batch matching the key padding's). Throws InvalidArgument naming the argument
// as `spelling` writes the flag ("--global-mask" / "global_mask"), FieldError for the
// pattern's parameters; refuses a mask that cannot fit before building it.
Tensor<uint8_t> convention_mask(const PatternSpec& spec, PatternSizes sizes,
                                const Conventions& conv, const Tensor<uint8_t>* global_mask,
                                Spelling spelling);

}  // namespace sparseattn::api
