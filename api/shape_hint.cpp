// Conventions behind `check`'s shape errors; see shape_hint.h.
#include "api/shape_hint.h"

#include "core/field.h"

#include <string>
#include <utility>

namespace sparseattn::api {

namespace {

// "q has 8 heads, k and v 3: ..." when q and k (bhsd, rank 4) differ only in num_heads and
// q's heads are not a multiple of k's: grouped-query attention (contract §2.7) needs them
// to be; heads that divide are grouped-query attention itself and need no hint.
std::string gqa_sentence(const Shape& q, const Shape& k, const Shape& v) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return "";
  if (q[0] != k[0] || q[3] != k[3] || q[1] == k[1] || k[1] != v[1] || k[2] != v[2]) return "";
  if (k[1] < 1 || q[1] % k[1] == 0) return "";
  return "q has " + std::to_string(q[1]) + " heads, k and v " + std::to_string(k[1]) +
         ": grouped-query attention needs q's heads to be a whole multiple of k's (query head "
         "h reads kv head h / g, contract §2.7)";
}

Shape swapped(const Shape& s) {
  if (s.size() != 4) return s;
  return {s[0], s[2], s[1], s[3]};
}

}  // namespace

std::string shape_error_hint(const InvalidArgument& e, const Shape& q, const Shape& k,
                             const Shape& v, const std::function<void()>& fits_other_layout,
                             const std::string& other_layout, bool other_is_bshd) {
  if (std::string(e.what()).find("must be finite") != std::string::npos) return "";
  const std::string here = gqa_sentence(q, k, v);
  if (!here.empty()) return here;
  const std::string order = other_is_bshd ? "[batch, seq_len, num_heads, head_dim]"
                                          : "[batch, num_heads, seq_len, head_dim]";
  try {
    fits_other_layout();
    return "did you mean " + other_layout + "? The inputs' shapes fit " + order +
           " (contract §1.6)";
  } catch (const InvalidArgument&) {
  }
  const std::string there = gqa_sentence(swapped(q), swapped(k), swapped(v));
  if (!there.empty())
    return "did you mean " + other_layout + "? Read as " + order + ", " + there;
  return "";
}

void throw_with_hint(const InvalidArgument& e, const std::string& hint) {
  if (hint.empty()) throw;
  // A pattern field's error stays a FieldError, so each front end still spells its field.
  if (const auto* f = dynamic_cast<const FieldError*>(&e))
    throw FieldError(f->field(), f->detail(), f->value(), f->allowed() + "; " + hint, f->head());
  throw InvalidArgument(e.argument(), e.value(), e.allowed() + "; " + hint);
}

}  // namespace sparseattn::api
