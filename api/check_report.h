// The parts of `check`'s report that locate and explain a failure (contract §4.9): where
// the mismatches are (per batch and head, failing query rows as ranges), the worst row in
// full, non-finite values named as strings; the cause probes that name the mistake are
// api/probes.h. check_against_oracle()
// (api/results.h) builds its JSON from these, so the CLI and the Python package agree.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/conventions.h"
#include "core/numerics.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

// A number for the JSON report: finite values as numbers, others as "nan", "inf", "-inf"
// (JSON has no non-finite numbers; null would hide NaN vs -inf).
nlohmann::json number_json(double x);

// "0-3,7,9-12": sorted distinct indices as inclusive ranges; at most `max_ranges` ranges,
// then ",... (N more)".
std::string ranges_text(const std::vector<int64_t>& sorted, size_t max_ranges = 24);

// The location part of one tensor's report. `cand` and `ref` are [B, H, Lq, X] (o, X =
// head_dim_v) or [B, H, Lq] (lse); `skip_row(b, i)` rows are not compared. Adds to `j`:
// mismatches (per "b,h"), rows (failing query rows per "b,h" as ranges, at most 32 heads),
// worst_row (batch, head, row, expected/candidate first 8 elements, allowed_keys as ranges,
// num_allowed_keys, fully_masked, padded_query), first_nonfinite, error_over_tolerance and
// its meaning; rewrites worst_candidate/worst_reference/budget_used as number_json.
void locate_failures(nlohmann::json& j, const Tensor<double>& cand, const Tensor<double>& ref,
                     Tolerance tol, const Pattern& pattern, const std::vector<uint8_t>& skip_row);

// The location part of one gradient's report (contract §7.3): `cand` and `ref` are
// [B, H, L, W] (dq, dq_global: query rows; dk, dv, dk_global, dv_global: key rows). Adds to
// `j` mismatches (per "b,h"), rows (failing rows per "b,h" as ranges, at most 32 heads;
// rows_truncated beyond), and rows_are ("query" or "key", as given).
void locate_gradient_failures(nlohmann::json& j, const Tensor<double>& cand,
                              const Tensor<double>& ref, Tolerance tol, const char* rows_are);

// Whether `cand` matches `ref` within `tol` on every row not in `skip_row` (and, when
// `only_rows` is non-empty, only on rows flagged there). Rank as for locate_failures.
bool matches(const Tensor<double>& cand, const Tensor<double>& ref, Tolerance tol,
             const std::vector<uint8_t>& skip_row, const std::vector<uint8_t>* only_rows = nullptr);

// The cause probes (ProbeInputs, probe_causes) live in api/probes.h.

// A short human summary of a check report (the JSON check_against_oracle returns): pass or
// fail, per tensor the reason, failing rows, worst row and error over tolerance, and the
// probable cause. Used by `check --format text` and on stderr when a check fails.
std::string check_summary_text(const nlohmann::json& report);

}  // namespace sparseattn::api
