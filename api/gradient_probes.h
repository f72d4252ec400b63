// Cause probes for failing candidate gradients (contract §4.9, docs/backward.md): as
// probe_causes (api/check_report.h) does for o and lse, re-runs the gradient oracle
// b1_dense_masked_grad under the usual mistakes of a backward pass and names the first one
// every judged gradient matches within its tolerance.
#pragma once

#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "api/check_result.h"
#include "api/probes.h"
#include "core/tensor.h"
#include "pattern/pattern.h"
#include "reference/backward/backward.h"

namespace sparseattn::api {

inline constexpr double kMaxGradientProbeWork = 6.0e7;

struct GradientCause {
  std::string probable_cause;  // "unknown: ..." when no probe matched
  nlohmann::json probes;       // {"tried": [{"probe", "matches"}...], "skipped": reason?}
};

// q, k, v, dout: rank 4 (bhsd), what check_gradients_against judged; `oracle`: dq, dk, dv
// of b1_dense_masked_grad on them, reports/cands the same (nullptr: not judged). In order:
// NaN/Inf only on fully masked query rows (dq) or keys no query attends (dk, dv), named
// first; then dq and dk without the scale factor; the softmax Jacobian without its row sum
// rowsum(dO ∘ O); scale 1/head_dim; scale 1; window one narrower or wider; causal toggled.
// Each re-runs the whole gradient oracle, so under options.mode automatic they run only up
// to kMaxGradientProbeWork multiply-adds per run (above it the report says so); always: any
// size; never: none.
GradientCause gradient_cause(const Tensor<double>& q, const Tensor<double>& k,
                             const Tensor<double>& v, const Tensor<double>& dout,
                             const Pattern& pattern, const double* scale,
                             const std::array<const Tensor<double>*, 3>& oracle,
                             const std::array<const TensorReport*, 3>& reports,
                             const std::array<const Tensor<double>*, 3>& cands,
                             const ProbeOptions& options = {});

}  // namespace sparseattn::api
