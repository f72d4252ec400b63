// The cause probes of `check` (contract §4.9): when a candidate fails, re-run the oracle's
// definition under the usual mistakes (a wrong scale, a window one off, globals that
// ignore causality, a window clipped at the sequence end, a missing diagonal, padded keys
// attended, the wrong layout, ...) and name the first one the candidate matches.
//
// Each probe recomputes rows, never the whole oracle: the worst row first, then the
// failing rows in a spread order, then a sample of passing rows the hypothesis changes;
// one row costs O(keys(row) · (head_dim + head_dim_v)), so a probe is O(rows · L_k · d)
// at worst and causes are named at n 16384–131072 (docs/numerics.md, "Cause probes at
// real sizes", has the timings). The probes run in a fixed order under a wall-clock
// budget; the report lists those the budget left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/conventions.h"
#include "core/numerics.h"
#include "core/tensor.h"
#include "pattern/pattern.h"
#include "reference/attention.h"

namespace sparseattn::api {

// --probes auto|always|never, --probe-budget SECONDS (Python: probes=, probe_budget=).
//   automatic: each probe checks the failing rows until it has spent its share of work
//     (a spread sample of at least 64 rows when they are many), and no probe starts
//     after `budget_s` seconds of wall clock since the probes began;
//   always: every probe on every failing row, no budget;
//   never: no probe runs (probable_cause says so).
struct ProbeOptions {
  enum class Mode { automatic, always, never };
  Mode mode = Mode::automatic;
  double budget_s = 5.0;
};

// Parses the mode ("auto", "always", "never") and the budget (finite, > 0 seconds).
// `mode_name`/`budget_name` are the argument as the caller spells it ("--probes" or
// "probes"). Throws InvalidArgument naming it.
ProbeOptions parse_probe_options(const std::string& mode, double budget_s,
                                 const std::string& mode_name, const std::string& budget_name);

// What check_against judged, for the probes. q/k/v: [B, H, L, d] (bhsd); o: the
// candidate [B, H, Lq, dv]; lse: [B, H, Lq] in the base `conv` names, or null.
struct ProbeInputs {
  const Tensor<double>& q;
  const Tensor<double>& k;
  const Tensor<double>& v;
  const Pattern& pattern;   // as judged: conventions (padding polarity, alignment) applied
  const double* scale;      // null: 1/sqrt(head_dim)
  const Conventions& conv;
  const Tensor<double>& o;
  Tolerance o_tol;
  const Tensor<double>* lse;
  Tolerance lse_tol;
  const std::vector<uint8_t>& skip_row;  // [B * Lq]: rows not compared (empty: none)
  const AttentionResult& oracle;         // convention_oracle on the inputs as given
  const PatternSpec* raw_spec = nullptr; // the flags' spec before conventions, if known
  ProbeOptions options{};
  // The softcap, ALiBi slopes and sinks the oracle used (contract §2.8–§2.9), or null. k and
  // v may have fewer heads than q (contract §2.7). Either adds the probes of the usual
  // mistakes with them: kv head h mod H_kv, sinks ignored or in only one of lse and p,
  // softcap missing, before the scale or after the mask, ALiBi's sign or alignment.
  const ScoreMods* mods = nullptr;
};

// Runs the probes on a failing candidate. Returns
//   {"probable_cause": the first matching probe's sentence, or "unknown: ...",
//    "probes": {"mode", "budget_s" (auto only),
//               "tried": [{"probe", "matches", "rows_checked", "failing_rows"}...],
//               "not_run": [names the budget left out] (when any),
//               "skipped": why none ran (--probes never),
//               "worst_row_keys": {"batch", "head", "row", "added", "removed", "text"}}}.
// worst_row_keys: the smallest change of the worst row's key set (at most two ranges of
// keys added or removed) under which the oracle's definition gives the candidate's row,
// e.g. "row 511 (batch 0, head 0) matches if keys 255-256 are removed". The report holds
// no timing: within the budget it is a function of the inputs alone.
nlohmann::json probe_causes(const ProbeInputs& in);

}  // namespace sparseattn::api
