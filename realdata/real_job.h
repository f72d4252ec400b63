// The main job on real data: every exact reference step and every optimized
// kernel of the registry, on every head of the stored layers of all-MiniLM-L6-v2 on the
// GPL-3 text, per pattern; figures and a markdown report are written by report.h.
//
// What is measured, per (layer, pattern), all heads at once (a [1, 12, n, 32] problem):
//   oracle       a1_dense_masked (float64) on the pattern: the reference every method
//                must match, at the kernel's own tolerance from core/numerics.h;
//   mass kept    per head, mean over queries of Σ_{j ∈ A(i)} P_ij with P the dense
//                softmax: computed as mean_i exp(lse_A(i) − lse_dense(i)) from the two
//                oracles (the same number `sparseattn analyze` reports as pattern_mass);
//   vs dense     how much the sparsity changes the result: the pattern's output against
//                the dense oracle's, max |Δo| and ‖Δo‖_F / ‖o_dense‖_F;
//   per method   max |o − oracle|, tolerance budget used, pass/fail (check_close), wall
//                time (min over `repeats`), speedup = the fastest same-target kernel's
//                time per head on the dense pattern / this time per head. Check and time
//                are the harness's (api/measure.h): the first run is checked and counts
//                among the `repeats` only when it passed; a failed method is not timed.
// Kernels of target cuda are not run here (no device on the build machines).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "realdata/dataset.h"
#include "pattern/spec.h"

namespace sparseattn::realdata {

struct NamedPattern {
  std::string label;  // short, for tables and legends: "window w=32"
  PatternSpec spec;
};

// dense (the baseline) and the sparse patterns the report compares: sliding windows
// w = 32 and 128, Longformer w = 64 with the [CLS] token global, BigBird ITC b = 64, r = 3.
std::vector<NamedPattern> default_patterns();

struct JobOptions {
  std::string data_dir = "data";
  std::string out_dir = "build/real-data-report";
  LoadOptions load;               // seq_len slice, layers, sha256 verification
  std::vector<NamedPattern> patterns = default_patterns();  // first must be dense
  int64_t repeats = 1;            // timing: min over this many runs (>= 1)
  // On the dense pattern every reference step costs O(n²) per head in float64 — minutes
  // at n = 4096 on 2 cores, and it shows nothing the sparse patterns do not. So there the
  // steps other than the oracle run on the first `dense_reference_heads` heads only
  // (0 = all heads). The oracle and the optimized kernels always run on every head.
  int64_t dense_reference_heads = 2;
  bool figures = true;            // write PNGs with gnuplot (skipped, and said, if absent)
  bool verbose = true;            // one progress line per (layer, pattern) on stderr
};

struct MethodResult {
  std::string kernel;
  std::string target;             // "reference" or "cpu"
  std::string dtype;
  double atol = 0.0, rtol = 0.0;  // the kernel's registry tolerance
  bool pass = false;              // check_close against the oracle, o and lse
  std::string failure;            // check_close's reason when !pass
  double max_abs_error = 0.0;     // max |o − oracle| (o only)
  double budget_used = 0.0;       // max over o and lse of check_close's budget use
  double max_abs_vs_dense = 0.0;  // max |o − o_dense_oracle|
  double rel_vs_dense = 0.0;      // ‖o − o_dense‖_F / ‖o_dense‖_F
  int64_t heads_run = 0;          // heads in the problem it ran on (all, or a subset)
  double seconds = 0.0;           // wall time of run() on heads_run heads, min over repeats
                                  // (NaN when it failed its check: not timed)
  // Fastest same-target time per head on the dense pattern / this method's time per head.
  double speedup_vs_dense = 0.0;
  bool fastest_optimized = false; // the fastest optimized (cpu) kernel on this pattern
};

struct PatternResult {
  int64_t layer = 0;
  std::string label, description;
  int64_t nnz = 0;
  double density = 0.0;
  double flops = 0.0;             // attention_flops of the pattern (all heads)
  std::vector<double> mass_kept;  // per head
  double mass_min = 0.0, mass_median = 0.0, mass_max = 0.0;
  double oracle_seconds = 0.0;
  double max_abs_vs_dense = 0.0;  // the oracle's output against the dense oracle's
  double rel_vs_dense = 0.0;
  std::vector<MethodResult> methods;
};

struct JobResult {
  RealDataset data;               // q/k/v kept for the figures
  std::vector<PatternResult> results;  // layer-major, patterns in options order
  bool all_pass = true;
  double total_seconds = 0.0;
};

// Runs the job (no files written). Throws InvalidArgument for bad data or options
// ("--repeats" < 1, a first pattern that is not dense).
JobResult run_real_job(const JobOptions& options);

// Median of a non-empty list (mean of the two middle values for an even count).
double median(std::vector<double> x);

}  // namespace sparseattn::realdata
