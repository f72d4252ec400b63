// The report of the real-data main job: markdown, results.json and the figures
// (gnuplot through gnuplot-iostream). Every number in them comes from run_real_job().
#pragma once

#include <string>

#include "realdata/real_job.h"

namespace sparseattn::realdata {

// Writes into options.out_dir (created if missing):
//   report.md                 tables per layer and pattern, figure links, caveats
//   results.json              every number of the tables
//   real_heatmap.png          one real head's dense attention (first 256 tokens, log10
//                             colour) with each pattern's mask over it (dimmed = dropped)
//   real_mass_kept.png        mass kept per head, one line per pattern
//   real_error_vs_time.png    error against dense vs wall time, every method, one chart
// Figures are skipped (and the report says so) when options.figures is false or gnuplot
// is not installed. Returns the path of report.md. Throws RuntimeError if a file cannot
// be written.
std::string write_report(const JobResult& job, const JobOptions& options);

}  // namespace sparseattn::realdata
