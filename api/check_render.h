// The one renderer of `check`'s result (api/check_result.h, contract §4.9): as the JSON
// object `sparseattn check` prints, and as the human summary `check --format text` prints
// (and a failing JSON check writes to stderr). The Python package calls the same functions
// (python/src/report_bindings.cpp): CheckReport.to_dict() is check_json, CheckReport.summary()
// is check_text byte for byte, TensorReport.line() is tensor_line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/check_result.h"

namespace sparseattn::api {

// One tensor's report as JSON: core/check.h's fields (tensor, pass, reason, num_elements,
// num_nonfinite, num_mismatched, max_abs_error, max_rel_error (and their _finite maxima over
// the elements where both values are finite), worst_index, worst_candidate,
// worst_reference, budget_used, atol, rtol), num_compared, nothing_compared, rows_are,
// mismatches, rows, rows_truncated, worst_row, first_nonfinite, error_over_tolerance (=
// budget_used) and its meaning, reference_error, probable_cause. Non-finite numbers are
// the strings "nan", "inf", "-inf".
nlohmann::json tensor_json(const TensorReport& t);

// The whole report: oracle, pattern, shape, conventions, o, lse, dq, dk, dv (those
// present), gradient_oracle, tolerance_rule, rows_not_compared, probable_cause, probes,
// hint, compat, global_mask, global_projections (those set), pass.
nlohmann::json check_json(const CheckResult& r);

// One line per tensor, in the manner of torch.testing.assert_close: "o: ok (...)",
// "o: mismatched elements 3 / 640 (0.5%); ...", or "o: nothing compared (...)".
std::string tensor_line(const TensorReport& t);

// The human summary, every line ending in "\n": verdict, pattern and shape, one line per
// tensor; on failure where it fails (worst element, failing rows per (batch, head), worst
// row against its allowed keys, first non-finite value), the probable cause (also when it
// is unknown, then a hint read off the report), and the convention hint.
std::string check_text(const CheckResult& r);

}  // namespace sparseattn::api
