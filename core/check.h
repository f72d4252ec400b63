// The one checker (itself tested): compares a candidate tensor with the float64 oracle.
//
// Order of checks, as ggml's test-backend-ops does: shapes first, then non-finite values
// (a NaN or Inf where the oracle is finite fails before any error metric), then per
// element |x - ref| <= atol + rtol * |ref|. -inf in both (lse of a fully masked row)
// matches; -inf in only one does not.
#pragma once

#include <cstdint>
#include <string>

#include "core/numerics.h"
#include "core/tensor.h"

namespace sparseattn {

struct CheckReport {
  bool pass = false;
  std::string reason;          // "" on pass; else the first failure, in words
  int64_t num_elements = 0;
  int64_t num_nonfinite = 0;   // candidate NaN/Inf where the oracle is finite
  int64_t num_mismatched = 0;  // elements outside atol + rtol*|ref| (incl. non-finite)
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // |x - ref| / |ref| over elements with ref != 0
  int64_t worst_index = -1;    // flat index of the largest budget use
  Shape worst_position;        // the same, as a multi-index
  double worst_candidate = 0.0, worst_reference = 0.0;
  double budget_used = 0.0;    // max over elements of |x - ref| / (atol + rtol*|ref|); pass <= 1
};

// candidate and reference must have the same number of elements (shapes may differ only
// by leading 1s); otherwise the report fails with reason "shape mismatch".
CheckReport check_close(const Tensor<double>& candidate, const Tensor<double>& reference,
                        Tolerance tol);
CheckReport check_close(const Tensor<float>& candidate, const Tensor<double>& reference,
                        Tolerance tol);

// JSON object text of a report (nlohmann::json), with `name` as its "tensor" field.
std::string report_json(const CheckReport& report, const std::string& name, Tolerance tol);

}  // namespace sparseattn
