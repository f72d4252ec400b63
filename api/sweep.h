// The engine of `sparseattn sweep` and of sparseattn.sweep() (python/): time every chosen
// kernel on one pattern over a range of sequence lengths, each point validated against the
// float64 oracle before it is timed
// (contract §4; the harness api/measure.h with api/oracle.h: the whole output while
// seq_len² <= 2048², sampled rows with the oracle's formula above), and fit log(time)
// over log(n). The figures are the command line's (cli/sweep.h).
//
// Every point's problem carries the request's score modifiers and grouped kv heads (contract
// §2.7–§2.9: k and v with num_kv_heads heads, softcap, ALiBi slopes, sinks), and its oracle
// is the oracle of that problem: a kernel is checked, and timed, on attention with them.
//
// A point is one (kernel, seq_len): one untimed call whose output is checked and whose
// extra heap is measured when the caller has a heap counter (SweepConfig::heap), then
// `repeats` timed calls of the kernel
// alone (inputs prepared once, no file I/O); median, min and max of those. A kernel that
// fails validation (or throws) is reported with the checker's reason and never timed, and
// the sweep goes on without it. Growth stops for a kernel when its next point is predicted
// (last time × (n_next / n)^slope, slope fitted on its points so far, 2 before it has two)
// to take longer than `max_seconds` in all, and a note says so.
//
// Honest on a busy machine: every timed call reads two clocks, the wall clock (steady) and
// the process's CPU time (all its threads summed, CLOCK_PROCESS_CPUTIME_ID). Before each
// point the sweep counts the other runnable threads (/proc/stat procs_running, less the
// reading thread; the 1-minute load average where /proc/stat is unreadable). When they
// would share the cores the sweep's threads use (judge_load), the wall clock measures the
// scheduler's time slices, not the kernel, and the slopes are fitted on CPU time instead;
// the report says which measure it fitted and warns in one line (load_warning). CPU time
// is the kernel's work alone only with one thread: with several, a thread spinning at a
// barrier while its partner waits for a core is counted too, so the default thread count
// (auto_threads) leaves the busy cores to their owners.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "api/measure.h"
#include "core/field.h"
#include "core/score_mods.h"
#include "pattern/pattern.h"
#include "registry/registry.h"

namespace sparseattn::api {

struct SweepConfig {
  PatternSpec spec;                        // materialized at every seq_len
  int64_t num_heads = 1;
  int64_t head_dim = 64;
  int64_t num_kv_heads = 0;                // of k and v, divides num_heads; 0: num_heads (§2.7)
  ScoreMods mods;                          // softcap, ALiBi slopes [H] / sinks [H] (§2.8–§2.9)
  std::vector<int64_t> seq_lens;           // ascending
  // Each must serve spec and the features of num_kv_heads and mods (checked per point).
  std::vector<const Kernel*> kernels;
  // Timed on the dense pattern with the same q, k, v (the speedup figure's denominator);
  // nullptr: none.
  const Kernel* dense_baseline = nullptr;
  int repeats = 5;                         // timed calls per point, >= 1
  double max_seconds = 30.0;               // per point (validation call + repeats), > 0
  int64_t fit_from = 0;                    // fit slopes on points with seq_len >= fit_from
  std::ostream* progress = nullptr;        // a progress line per point; nullptr = quiet
  // The heap counter of the validation call (api/alloc_tracker.h's heap_probe() where the
  // program links it: the CLI, bench/); none (the Python module): peak_bytes stays 0.
  HeapProbe heap;
  int threads = 1;                         // OpenMP threads of every call, >= 1 (set for the run)
};

// What a front end asks for, before the kernels are chosen: `sparseattn sweep`'s flags,
// sparseattn.sweep()'s keywords.
struct SweepRequest {
  PatternSpec spec;
  int64_t num_heads = 1;
  int64_t head_dim = 64;
  int64_t num_kv_heads = 0;            // in [1, num_heads], divides it; 0: num_heads (§2.7)
  ScoreMods mods;                      // validated for batch 1, num_heads (§2.8–§2.9)
  std::vector<int64_t> seq_lens;       // ascending, each >= 1
  // "auto" (every exact kernel serving spec, num_kv_heads and mods) or NAME[,NAME...]
  std::string impl = "auto";
  std::string target;                  // "" (any), "cpu", "reference" or "cuda"
  std::string dtype = "any";           // any|float32|float64|float16|bfloat16
  int64_t repeats = 5;                 // in [1, 1000]
  double max_seconds = 30.0;           // finite, > 0
  // auto (cpu_k01_dense_flash unless spec is dense, and only if it serves the features),
  // none, NAME; the baseline runs with the same kv heads and mods.
  std::string dense_baseline = "auto";
  int64_t fit_from = 0;                // >= 0
  // OpenMP threads, in [1, 1024]; 0: auto_threads(other runnable threads now, cores online).
  int64_t threads = 0;
};

// The SweepConfig of a request: the kernels chosen (named ones must be exact, serve the
// pattern and the features num_kv_heads and mods need (Kernel::features, needed_features),
// match target and dtype; "auto" every exact registry kernel that serves them all) and
// the dense baseline; `notes` receives why "auto" found none. Throws InvalidArgument naming
// the argument as `spelling` writes its flag (spell_flag: "--max-seconds" on the command
// line, "max_seconds" in Python) for a bad value (num_kv_heads not dividing num_heads
// included) or when no kernel is left to run, FieldError(impl) for an unknown kernel name
// and FieldError(softcap, alibi_slopes, sinks) for modifiers out of range
// (validate_score_mods: the front end spells the field).
SweepConfig plan_sweep(const SweepRequest& request, std::vector<std::string>& notes,
                       Spelling spelling);

// One (kernel, seq_len). Times are seconds per call; NaN when not timed.
struct SweepPoint {
  std::string impl;          // kernel name
  std::string pattern;       // "pattern" or "dense" (the baseline)
  int64_t seq_len = 0;
  bool validated = false;
  bool oracle_full = false;  // whole output checked (else sampled rows)
  std::string failure;       // why validation failed or the kernel threw ("" when validated)
  int repeats = 0;           // timed calls made
  double median_s = 0.0, min_s = 0.0, max_s = 0.0;  // wall clock
  // Process CPU time per call (all threads summed), over the same calls.
  double cpu_median_s = 0.0, cpu_min_s = 0.0, cpu_max_s = 0.0;
  double others_runnable = NAN;  // other runnable threads before the point (NaN: unreadable)
  int64_t peak_bytes = 0;    // extra heap of the validation call, outputs included
  double flops = 0.0;        // 4 · nnz · head_dim (pattern_stats / attention_flops)
  double dense_flops = 0.0;  // 4 · H · n² · head_dim
  double density = 0.0;
};

// A least-squares line log(y) = intercept + slope · log(x).
struct LogLogFit {
  double slope = 0.0, intercept = 0.0;
  int points = 0;  // points used; slope is meaningful when >= 2
};
// Fits `xy` (pairs with x > 0 and y > 0; others are skipped). Exact for y = c · x^k.
LogLogFit fit_loglog(const std::vector<std::pair<double, double>>& xy);

// ---- The load a sweep runs under, and which clock its slopes are fitted on ----------------

// The clock a slope is fitted on: the wall clock, or the process's CPU time.
enum class TimeMeasure { wall, cpu };
// "wall time" or "CPU time" (the report's words); measure_key: "wall" or "cpu" (JSON).
const char* measure_name(TimeMeasure m);
const char* measure_key(TimeMeasure m);

// The `procs_running N` line of /proc/stat's text (runnable threads now, the reader
// included); -1 when the text has none.
int parse_procs_running(const std::string& proc_stat);

// Other runnable threads from samples of procs_running: the mean of (sample - 1), each
// sample counting the thread that read it. NaN for no samples; negative samples skipped.
double other_runnable(const std::vector<int>& procs_running);

// `samples` readings of /proc/stat's procs_running, 2 ms apart, after a 5 ms pause (an
// OpenMP worker still spinning after the last parallel region would count as runnable);
// empty where /proc/stat is unreadable (not Linux).
std::vector<int> sample_procs_running(int samples);

// Whether a sweep with `threads` threads on `cores` online cores is disturbed: it is busy
// when the other runnable threads would share the cores its threads use, i.e.
// others > cores - threads + 0.5 (half a thread of slack for a sampling accident). `others`
// is procs_running's count when finite, else `load_average` (the 1-minute figure, taken
// before the sweep ran: later it counts the sweep itself); neither finite: not busy, source
// "none". Busy: the slopes are fitted on CPU time, else on wall time.
struct LoadVerdict {
  bool busy = false;
  TimeMeasure measure = TimeMeasure::wall;
  double others = NAN;       // the count judged
  std::string source = "none";  // "procs_running", "load average" or "none"
  int cores = 1, threads = 1;
};
LoadVerdict judge_load(double others_procs, double load_average, int cores, int threads);

// The report's line on it, e.g. "slopes fitted on wall time: 0.2 other runnable threads
// (procs_running) beside 1 sweep thread on 2 cores".
std::string load_line(const LoadVerdict& v);
// One warning line when busy ("" when not): what was seen and which clock was fitted;
// with several threads, that CPU time counts their spinning unless OMP_WAIT_POLICY=passive.
std::string load_warning(const LoadVerdict& v);
// The verdict as JSON: {"busy", "fit_measure", "others_runnable", "source", "cores",
// "threads"}.
nlohmann::json load_json(const LoadVerdict& v);

// The default thread count: the cores the other runnable threads leave free,
// round(cores - others), in [1, cores]; cores when others is NaN (nothing known). On 2 cores
// with one busy neighbour: 1 thread, whose wall time the neighbour does not slice.
int auto_threads(double others, int cores);

struct SweepResult {
  std::vector<SweepPoint> points;                         // in the order measured
  std::vector<std::string> notes;                         // stopped growing, skipped, failed
  std::vector<std::pair<std::string, std::string>> skipped;  // (impl, reason): never ran
  int failures = 0;                                       // points that failed validation
  LoadVerdict load;  // judged on every point's procs_running samples; decides the fits
  double load_average_start = NAN;  // 1-minute load average before the first point
};

// Runs the sweep. Throws InvalidArgument for a bad config (empty lists, repeats < 1, ...)
// or a pattern that does not materialize. A kernel that throws RuntimeError "no CUDA
// device" is skipped with that reason; any other throw counts as a failed point.
SweepResult run_sweep(const SweepConfig& config);

// The seconds per call a fit reads from a point: median_s (wall) or cpu_median_s.
double fit_seconds(const SweepPoint& p, TimeMeasure m);

// Fitted slope of each series (impl on its pattern), from the timed points with
// seq_len >= fit_from, on result.load.measure's clock, beside the slope of its FLOP count
// over the same points (what the time slope should match): {"impl", "pattern", "slope",
// "flop_slope", "measure" ("wall" or "cpu"), "points"}.
nlohmann::json sweep_fits(const SweepResult& result, int64_t fit_from);

// The points as JSON objects and as CSV text (header first).
nlohmann::json points_json(const std::vector<SweepPoint>& points);
std::string points_csv(const std::vector<SweepPoint>& points);

// Where and when: machine (uname, CPU model, cores), date (UTC, ISO 8601), commit (`git
// describe --always --dirty` of the working directory: "-dirty" = uncommitted changes; or
// "unknown"), load_average [1, 5, 15 min], omp_threads.
nlohmann::json run_context();

}  // namespace sparseattn::api
