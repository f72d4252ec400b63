// The figures of `sparseattn sweep`; the engine (run_sweep, the fits, the JSON and CSV of the
// points) is api/sweep.h, shared with sparseattn.sweep() in Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/sweep.h"

namespace sparseattn::cli {

using api::fit_loglog;
using api::LogLogFit;
using api::plan_sweep;
using api::points_csv;
using api::points_json;
using api::run_context;
using api::run_sweep;
using api::sweep_fits;
using api::SweepConfig;
using api::SweepPoint;
using api::SweepRequest;
using api::SweepResult;

// The figures of a sweep into `dir` as PNG and SVG (gnuplot): time_vs_seq_len (log-log,
// fitted slope in the legend), memory_vs_seq_len, speedup_vs_dense (measured against the
// FLOP bound dense_flops / flops; needs the baseline), fraction_of_peak. Returns the
// names written; none (and a reason in `why`) when gnuplot is missing.
std::vector<std::string> write_sweep_figures(const SweepResult& result, int64_t fit_from,
                                             double peak_gflops, const std::string& title,
                                             const std::string& dir, std::string* why);

}  // namespace sparseattn::cli
