// Validation and description of ScoreMods (core/score_mods.h, contract §2.8–§2.9, §5.1).
#include "core/score_mods.h"

#include <cmath>

#include "core/field.h"

namespace sparseattn {

namespace {

// Every entry of `t` finite, else FieldError(field, "[k]") naming the first one that is not.
void require_finite(const Tensor<double>& t, Field field) {
  for (int64_t e = 0; e < t.numel(); ++e)
    require_field(std::isfinite(t.data[static_cast<size_t>(e)]), field,
                  "[" + std::to_string(e) + "]", t.data[static_cast<size_t>(e)],
                  "must be a finite number");
}

}  // namespace

void validate_score_mods(const ScoreMods& mods, int64_t batch, int64_t num_heads) {
  if (mods.softcap)
    require_field(std::isfinite(*mods.softcap) && *mods.softcap > 0.0, Field::softcap, "",
                  *mods.softcap, "must be a finite number > 0");
  if (mods.alibi_slopes) {
    const Tensor<double>& a = *mods.alibi_slopes;
    const Shape h = {num_heads}, bh = {batch, num_heads};
    require_field(a.shape == h || a.shape == bh, Field::alibi_slopes, " shape", shape_text(a.shape),
                  "must be " + shape_text(h) + " (q num_heads) or " + shape_text(bh) +
                      " (batch, q num_heads)");
    require_finite(a, Field::alibi_slopes);
  }
  if (mods.sinks) {
    const Tensor<double>& s = *mods.sinks;
    const Shape h = {num_heads};
    require_field(s.shape == h, Field::sinks, " shape", shape_text(s.shape),
                  "must be " + shape_text(h) + " (one logit per q head)");
    require_finite(s, Field::sinks);
  }
}

std::string describe(const ScoreMods& mods) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (mods.softcap) add("softcap=" + to_text(*mods.softcap));
  if (mods.alibi_slopes) add("alibi " + shape_text(mods.alibi_slopes->shape));
  if (mods.sinks) add("sinks");
  return out;
}

}  // namespace sparseattn
