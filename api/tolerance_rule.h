// `check --tolerance-rule reference-error --factor F` (contract §4.10): the yardstick is a
// naive implementation in the candidate's own low precision — the dense masked definition
// (contract §2.1) with q, k, v rounded to that dtype, q·kᵀ accumulated in float32 and
// rounded, the scaled scores rounded, the softmax in float32 with its probabilities rounded,
// p·v accumulated in float32 and rounded — as FlashAttention's and xFormers' test suites
// judge low precision against an upcast reference. A tensor passes when
//   max |candidate − oracle| ≤ F · max |naive − oracle| + floor   and
//   mean |candidate − oracle| ≤ F · mean |naive − oracle| + floor
// over its compared elements (equal infinities count as 0 error, any other non-finite
// mismatch fails).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

enum class LowDtype { float32, float16, bfloat16 };

struct ToleranceRule {
  LowDtype dtype = LowDtype::float32;  // the naive implementation's precision
  double factor = 2.0;                 // F, finite >= 1
  double floor = 1e-6;                 // absolute, finite >= 0
};

// x rounded to nearest-even in `dtype` (overflow to ±inf, subnormals kept).
double round_to(double x, LowDtype dtype);
const char* low_dtype_name(LowDtype dtype);

// The naive low-precision attention described above; o [B,H,Lq,Dv], lse [B,H,Lq] (in
// float32 from the rounded scores, then rounded), o = 0 and lse = -inf on rows with no key.
AttentionResult naive_low_precision(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Pattern& pattern,
                                    const double* scale, LowDtype dtype);

// A tensor's verdict under the rule: the candidate's and the naive run's max and mean
// |x - oracle| over the compared elements (+inf for the candidate's max when a non-finite
// value mismatches), and pass.
struct ReferenceErrorVerdict {
  LowDtype naive_dtype = LowDtype::float32;
  double factor = 2.0, floor = 1e-6;
  double candidate_max = 0.0, candidate_mean = 0.0;
  double naive_max = 0.0, naive_mean = 0.0;
  bool pass = false;
  // The bound on a single element's error the failing rows are located against:
  // factor * naive_max + floor.
  double bound() const { return factor * naive_max + floor; }
};

// Judges `cand` against `oracle` with the naive result as yardstick; `skip` as in
// tensor_report (api/check_report.h: [B * Lq] rows not compared; empty: none).
ReferenceErrorVerdict judge_reference_error(const Tensor<double>& cand, const Tensor<double>& oracle,
                                            const Tensor<double>& naive, const ToleranceRule& rule,
                                            const std::vector<uint8_t>& skip);

}  // namespace sparseattn::api
