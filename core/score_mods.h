// The parameters that change an allowed pair's score or a row's softmax, beside the
// pattern that decides which pairs are allowed (contract §2.8 softcap and ALiBi, §2.9 sinks).
//
// A ScoreMods with nothing set is plain attention (contract §2.1); every kernel serves that.
// A kernel that reads a member declares it in its registry entry (registry/registry.h,
// `features`); one that does not refuses a problem that sets it, by name.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"

namespace sparseattn {

struct ScoreMods {
  // contract §2.8: s = c·tanh(s/c) on the scaled score; c finite and > 0.
  std::optional<double> softcap;
  // contract §2.8: s -= a[b, h]·|p − j|. [H_q] (every batch element) or [B, H_q], finite.
  std::optional<Tensor<double>> alibi_slopes;
  // contract §2.9: one logit per query head in every row's denominator. [H_q], finite.
  std::optional<Tensor<double>> sinks;

  bool has_softcap() const { return softcap.has_value(); }
  bool has_alibi() const { return alibi_slopes.has_value(); }
  bool has_sinks() const { return sinks.has_value(); }
  bool any() const { return has_softcap() || has_alibi() || has_sinks(); }

  // a[b, h] (0 without ALiBi). Valid after validate_score_mods().
  double slope(int64_t b, int64_t h) const {
    if (!alibi_slopes) return 0.0;
    const Tensor<double>& a = *alibi_slopes;
    return a.rank() == 1 ? a.data[static_cast<size_t>(h)]
                         : a.data[static_cast<size_t>(b * a.dim(1) + h)];
  }
  // σ_h (−inf without sinks: exp(−inf) = 0 adds nothing to a denominator).
  double sink(int64_t h) const {
    return sinks ? sinks->data[static_cast<size_t>(h)] : -INFINITY;
  }
};

// The score pipeline of contract §2.8 for an allowed pair: `scaled` = scale·<q_i, k_j>,
// then the softcap, then the ALiBi bias for query position p and key j. One definition,
// shared by the oracle and the reference steps; kernels write the same three steps in
// their own precision.
inline double pipeline_score(double scaled, const ScoreMods& mods, int64_t b, int64_t h,
                             int64_t p, int64_t j) {
  double s = scaled;
  if (mods.softcap) s = *mods.softcap * std::tanh(s / *mods.softcap);
  if (mods.alibi_slopes) s -= mods.slope(b, h) * static_cast<double>(p > j ? p - j : j - p);
  return s;
}

// Checks `mods` for a problem of `batch` elements and `num_heads` query heads (contract
// §5.1): softcap finite and > 0,
// alibi_slopes [H_q] or [B, H_q] and finite, sinks [H_q] and finite. Throws FieldError
// (core/field.h) naming Field::softcap, Field::alibi_slopes or Field::sinks.
void validate_score_mods(const ScoreMods& mods, int64_t batch, int64_t num_heads);

// "softcap=50, sinks, alibi" — the members set, for result headers; "" when none.
std::string describe(const ScoreMods& mods);

}  // namespace sparseattn
