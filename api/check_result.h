// The result of `check` as data (contract §4.9): one TensorReport per judged tensor (o, lse,
// dq, dk, dv, all with the same fields) and the verdict around them. check_against
// (api/results.h) fills it; api/check_render.h is the one place it becomes JSON or text, for
// `sparseattn check` and the Python package (python/src/report_bindings.cpp) alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tolerance_rule.h"
#include "core/numerics.h"
#include "core/tensor.h"

namespace sparseattn::api {

// What the third axis of a [B, H, rows, width] tensor indexes: o, lse and dq have a row per
// query, dk and dv a row per key.
// head: a tensor with one value per query head (dsinks [H_q], viewed as [1, H_q, 1]).
enum class RowKind { query, key, head };

// The row of the worst element, in full.
struct WorstRow {
  int64_t batch = 0, head = 0, row = 0;
  std::vector<double> expected, candidate;  // the row's first 8 elements (oracle, candidate)
  // A query row: the keys it may attend; a key row: the queries that may attend it. Inclusive
  // ranges ("0,37-43"), "" when none.
  std::string allowed;
  int64_t num_allowed = 0;
  bool fully_masked = false;  // num_allowed == 0
  bool padded = false;        // the row's position is key padding (a padded query or key)
};

// The first compared element where the oracle is finite and the candidate is not.
struct NonFinite {
  Shape index;  // [b, h, row] (lse) or [b, h, row, column]
  double candidate = 0.0, expected = 0.0;
};

struct TensorReport {
  std::string tensor;  // "o", "lse", "dq", "dk", "dv", "dq_global", "dk_global", "dv_global"
  RowKind rows_are = RowKind::query;
  bool pass = false;
  // No element compared (every row skipped): the tensor fails, whatever its values.
  bool nothing_compared = false;
  std::string reason;             // "" on a pass; else the failure in words
  int64_t num_elements = 0;       // of the tensor
  int64_t num_compared = 0;       // outside the rows not compared (--padded-queries any)
  int64_t num_nonfinite = 0;      // candidate NaN/Inf where the oracle is finite
  int64_t num_mismatched = 0;     // outside atol + rtol*|oracle| (non-finite included)
  // Over compared elements; NaN when a candidate NaN is compared with a non-NaN oracle
  // value, +inf when another non-finite mismatch is.
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  // core/check.h's maxima, over the compared elements where both values are finite.
  double max_abs_error_finite = 0.0, max_rel_error_finite = 0.0;
  // The worst element: the first NaN mismatch if there is one, else the largest
  // |candidate - oracle| / (atol + rtol*|oracle|) (the first non-finite mismatch: +inf).
  Shape worst_index;
  double worst_candidate = 0.0, worst_reference = 0.0;
  // The worst element's error over its allowance (core/check.h's budget_used): <= 1 passes
  // under the table; on a pass as on a failure. 0 when nothing is compared.
  double error_over_tolerance = 0.0;
  Tolerance tol{};  // under --tolerance-rule reference-error: the rule's bound {F·naive max + floor, 0}
  // Per (batch, head) "b,h" in (b, h) order: mismatched elements; failing rows as ranges
  // (at most 24 ranges per pair and 32 pairs; rows_truncated more pairs fail).
  std::vector<std::pair<std::string, int64_t>> mismatches;
  std::vector<std::pair<std::string, std::string>> rows;
  int64_t rows_truncated = 0;
  std::optional<WorstRow> worst_row;          // when an element mismatches
  std::optional<NonFinite> first_nonfinite;
  std::optional<ReferenceErrorVerdict> reference_error;  // the verdict under that rule
  std::string probable_cause;  // failing tensors: the cause named for them ("unknown: ..." if none)
};

struct CheckResult {
  std::string oracle;           // "a1_dense_masked", or the masked-score definition
  std::string pattern;          // describe(spec)
  AttentionShape shape;
  std::string score_mods;       // describe(ScoreMods): "softcap=50, sinks", "" for none
  std::string conventions;      // Conventions::describe()
  // Under a sequence layout (contract §2.10–§2.12; api/layout_check.h): what the batch index
  // of this report counts, e.g. "varlen: 3 sequences; batch index = sequence"; "" otherwise.
  std::string layout;
  TensorReport o;
  std::optional<TensorReport> lse, dq, dk, dv;
  // Under Longformer's global projections (contract §7.5): the projections' gradients.
  std::optional<TensorReport> dq_global, dk_global, dv_global;
  // With sinks (contract §7.7): the sinks' gradient dσ [H_q], rows per head (RowKind::head).
  std::optional<TensorReport> dsinks;
  bool pass = false;            // every tensor passes
  std::string gradient_oracle;  // the gradient definition judged against (b1_dense_masked_grad, ...), else ""
  std::string tolerance_rule;   // "reference-error" under that rule, else ""
  int64_t rows_not_compared = -1;  // (batch, head, row) triples skipped; -1: no row skipped
  // On failure: the first failing tensor's cause; probes: what probe_causes (or the gradient
  // probes) tried, {"tried": [...], "skipped": reason?}; null when none ran.
  std::string probable_cause;
  nlohmann::json probes;
  std::string hint;             // api/convention_hint.h's sentence on a failing o, or ""
  // What the CLI adds under the compatibility flags (contract §3.12).
  std::string compat, global_mask;
  bool global_projections = false;

  // The reports present, in the order o, lse, dq, dk, dv, dq_global, dk_global, dv_global, dsinks.
  std::vector<const TensorReport*> tensors() const {
    std::vector<const TensorReport*> t = {&o};
    for (const std::optional<TensorReport>* x :
         {&lse, &dq, &dk, &dv, &dq_global, &dk_global, &dv_global, &dsinks})
      if (*x) t.push_back(&**x);
    return t;
  }
  std::vector<TensorReport*> tensors_mutable() {
    std::vector<TensorReport*> t;
    for (const TensorReport* x : tensors()) t.push_back(const_cast<TensorReport*>(x));
    return t;
  }
  // The slot of a gradient's report by name ("dq", ..., "dv_global"); nullptr for another name.
  std::optional<TensorReport>* gradient(const std::string& name) {
    if (name == "dq") return &dq;
    if (name == "dk") return &dk;
    if (name == "dv") return &dv;
    if (name == "dq_global") return &dq_global;
    if (name == "dk_global") return &dk_global;
    if (name == "dv_global") return &dv_global;
    if (name == "dsinks") return &dsinks;
    return nullptr;
  }
};

}  // namespace sparseattn::api
