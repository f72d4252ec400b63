// `check`'s shape errors that are conventions (contract §5.2): a forgotten --layout bshd
// gives "invalid lse shape = [1, 4, 128]: must be [1, 128, 4]" (or a random-table or
// key-padding shape error), and grouped-query attention a num_heads mismatch. The front
// ends (cli/cmd_check.cpp, the Python binding) catch the InvalidArgument their input
// checks raise, ask shape_error_hint whether a convention explains it, and rethrow.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"
#include "core/tensor.h"

namespace sparseattn::api {

// e: the error the caller's checks raised; one about values (a non-finite input) gets no
// hint. q, k, v: the rank-4 shapes as read, already in [batch, num_heads, seq_len, d] order for
// the layout the caller was told. `fits_other_layout` repeats the caller's own shape checks
// (q/k/v, o, lse, the pattern's shapes) with the tensors read in the other layout, throwing
// InvalidArgument when they fail there too. `other_layout` is how the caller's user asks for
// it ("--layout bshd", or layout="bshd" in Python); `other_is_bshd` says which it is.
// Returns "" when no convention explains the error, else one sentence:
//   "did you mean --layout bshd? The inputs' shapes fit [batch, seq_len, num_heads, head_dim] ...",
//   "q has 8 heads, k and v 2: grouped-query attention? ... repeat each k/v head 4 times ...",
//   or both (the other layout reads as grouped-query attention).
std::string shape_error_hint(const InvalidArgument& e, const Shape& q, const Shape& k,
                             const Shape& v,
                             const std::function<void()>& fits_other_layout,
                             const std::string& other_layout, bool other_is_bshd);

// Throws `e` with "; " + hint appended to its text (same argument; a FieldError stays one,
// core/field.h), or rethrows the exception being handled when `hint` is empty. Call it only
// inside the catch block of `e`.
[[noreturn]] void throw_with_hint(const InvalidArgument& e, const std::string& hint);

}  // namespace sparseattn::api
