// The parts of `check`'s report that locate and explain a failure (contract §4.9): where
// the mismatches are (per batch and head, failing query rows as ranges), the worst row in
// full, non-finite values named as strings; the cause probes that name the mistake are
// api/probes.h. check_against_oracle() (api/results.h) builds its report
// (api/check_result.h) from these; api/check_render.h writes it as JSON and text, so the
// CLI and the Python package agree.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/check_result.h"
#include "api/conventions.h"
#include "core/numerics.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

// A number for the JSON report: finite values as numbers, others as "nan", "inf", "-inf"
// (JSON has no non-finite numbers; null would hide NaN vs -inf).
nlohmann::json number_json(double x);

// "0-3,7,9-12": sorted distinct indices as inclusive ranges; at most `max_ranges` ranges,
// then ",... (N more ranges)".
std::string ranges_text(const std::vector<int64_t>& sorted, size_t max_ranges = 24);

// One tensor's report (api/check_result.h), judged by core/check.h's checker and located.
// `cand` and `ref` are [B, H, rows, X] (o, dq: query rows; dk, dv: key rows, `rows_are`) or
// [B, H, Lq] (lse); `skip_row` [B * rows] (empty: none) marks rows not compared (their
// elements count in num_elements, not in num_compared). A tensor with no compared element
// fails as "nothing compared" (contract §4.9). The probable cause is left to the caller.
TensorReport tensor_report(const std::string& name, const Tensor<double>& cand,
                           const Tensor<double>& ref, Tolerance tol, const Pattern& pattern,
                           const std::vector<uint8_t>& skip_row, RowKind rows_are = RowKind::query);

// Whether `cand` matches `ref` within `tol` on every row not in `skip_row` (and, when
// `only_rows` is non-empty, only on rows flagged there), comparing at least one element: a
// comparison of nothing is no match, so no probe names a mistake whose fix would skip every
// row (contract §4.9). Rank as for tensor_report.
bool matches(const Tensor<double>& cand, const Tensor<double>& ref, Tolerance tol,
             const std::vector<uint8_t>& skip_row, const std::vector<uint8_t>* only_rows = nullptr);

// The cause probes (ProbeInputs, probe_causes) live in api/probes.h.

}  // namespace sparseattn::api
