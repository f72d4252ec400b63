// The sweep engine (api/sweep.h). Check-then-time is the harness's (api/measure.h), the
// heap count the caller's (SweepConfig::heap: api/alloc_tracker.h's in the CLI): one
// harness for benchmarks and sweeps alike.
#include "api/sweep.h"

#include <sys/utsname.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "api/measure.h"
#include "core/error.h"
#include "core/seeded_inputs.h"

namespace sparseattn::api {


namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process so far, all threads summed.
double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// The OpenMP thread count for the sweep's duration, the caller's restored after.
struct ScopedThreads {
  int saved;
  explicit ScopedThreads(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ScopedThreads() { omp_set_num_threads(saved); }
};

std::string fmt_count(double x) { return std::isfinite(x) ? fmt::format("{:.1f}", x) : "?"; }

// One problem (pattern, inputs, oracle) per seq_len, shared by every kernel at that n.
struct Instance {
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  PatternStats stats;
  std::unique_ptr<api::Oracle> oracle;  // built on first use
};

// k and v have kv_heads heads and the problem carries `mods` (contract §2.7–§2.9), so the
// oracle built from it (make_oracle) is the oracle of attention with them.
Instance make_instance(const PatternSpec& spec, int64_t heads, int64_t kv_heads, int64_t n,
                       int64_t head_dim, const ScoreMods& mods) {
  Instance in;
  in.pattern = std::make_unique<Pattern>(materialize(spec, {1, heads, n, n}));
  const uint64_t seed = testing_inputs::seed_of("sweep/" + std::to_string(n));
  // The same q, k, v for the pattern and the dense baseline (seeded by n only).
  in.problem = make_problem(testing_inputs::random_tensor({1, heads, n, head_dim}, seed),
                            testing_inputs::random_tensor({1, kv_heads, n, head_dim}, seed + 1),
                            testing_inputs::random_tensor({1, kv_heads, n, head_dim}, seed + 2),
                            *in.pattern, nullptr, mods);
  in.stats = pattern_stats(*in.pattern);
  return in;
}

// The Feature bits of grouped heads and the modifiers (the pattern adds its own).
unsigned needed_bits(int64_t heads, int64_t kv_heads, const ScoreMods& mods) {
  AttentionShape shape;
  shape.num_heads = heads;
  shape.num_kv_heads = kv_heads;
  return needed_features(shape, mods);
}

bool serves_bits(const Kernel& k, unsigned needed) { return (needed & ~k.features) == 0; }

// What is known of one series while the sweep runs.
struct Series {
  const Kernel* kernel = nullptr;
  bool dense = false;     // the baseline, on the dense pattern
  bool active = true;     // still growing n
  std::vector<std::pair<double, double>> timed;  // (n, seconds per call)
};

// Predicted seconds per call at n (time law of the series so far; slope 2 until two points).
double predict(const Series& s, double n) {
  if (s.timed.empty()) return NAN;
  const LogLogFit fit = fit_loglog(s.timed);
  const double slope = fit.points >= 2 ? std::max(fit.slope, 0.0) : 2.0;
  const auto& [n0, t0] = s.timed.back();
  return t0 * std::pow(n / n0, slope);
}

bool no_device(const std::exception& e) {
  return std::string(e.what()).find("no CUDA device") != std::string::npos;
}


std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The kernels to sweep: named ones (each must serve the pattern and the `needed` features,
// and be exact), or every exact registry kernel that serves them, filtered by target and
// dtype.
std::vector<const Kernel*> choose_kernels(const SweepRequest& a, const Pattern& probe,
                                          unsigned needed, std::vector<std::string>& notes,
                                          Spelling s) {
  const std::string impl_arg = spell_flag("--impl", s);
  if (!a.target.empty())
    require(a.target == "cpu" || a.target == "reference" || a.target == "cuda",
            spell_flag("--target", s), a.target, "must be cpu, reference or cuda");
  require(a.dtype == "any" || a.dtype == "float32" || a.dtype == "float64" ||
              a.dtype == "float16" || a.dtype == "bfloat16",
          spell_flag("--dtype", s), a.dtype, "must be any, float32, float64, float16 or bfloat16");
  std::vector<const Kernel*> out;
  if (a.impl == "auto") {
    for (const Kernel& k : kernels()) {
      if (!a.target.empty() && a.target != target_name(k.target)) continue;
      if (a.dtype != "any" && a.dtype != dtype_name(k.dtype)) continue;
      if (!k.exact) continue;  // approximations are not held to the oracle's tolerance
      if (!k.serves(probe)) continue;
      if (!serves_bits(k, needed)) continue;  // it would refuse (or miscompute) the problem
      out.push_back(&k);
    }
    if (out.empty())
      notes.push_back(fmt::format("{} auto: no exact kernel{}{} serves {}{}", impl_arg,
                                  a.target.empty() ? "" : " of target " + a.target,
                                  a.dtype == "any" ? "" : " in " + a.dtype, describe(probe.spec),
                                  needed == kPlain ? "" : " with " + feature_names(needed)));
    if (a.target == "cuda" || a.target.empty()) {
      bool any_cuda = false;
      for (const Kernel& k : kernels()) any_cuda |= k.target == Target::cuda;
      if (!any_cuda) notes.push_back("no CUDA kernels in this build (configured without nvcc)");
    }
    return out;
  }
  for (const std::string& name : split_commas(a.impl)) {
    const Kernel* k = &find_kernel(name);  // FieldError(impl): the front end spells it
    require(k->exact, impl_arg, name,
            "is an approximation; sweep times only kernels held to the oracle's tolerance");
    require(k->serves(probe), impl_arg, name,
            std::string("does not serve ") + describe(probe.spec) + " (it serves " + k->patterns + ")");
    require(serves_bits(*k, needed), impl_arg, name,
            "does not serve " + feature_names(needed & ~k->features) +
                " (contract §2.7-§2.9); " + impl_arg + " auto picks the kernels that do");
    require(a.target.empty() || a.target == target_name(k->target), impl_arg, name,
            "is not a " + spell_flag("--target", s) + " " + a.target + " kernel");
    require(a.dtype == "any" || a.dtype == dtype_name(k->dtype), impl_arg, name,
            "is not a " + spell_flag("--dtype", s) + " " + a.dtype + " kernel");
    out.push_back(k);
  }
  return out;
}

}  // namespace

SweepConfig plan_sweep(const SweepRequest& a, std::vector<std::string>& notes, Spelling s) {
  const std::string seq_arg = spell_flag("--seq-len", s);
  require(!a.seq_lens.empty(), seq_arg, "none", "give at least one sequence length");
  for (size_t i = 0; i < a.seq_lens.size(); ++i) {
    require(a.seq_lens[i] >= 1, seq_arg, a.seq_lens[i], "must be an integer >= 1");
    if (i > 0) require(a.seq_lens[i] > a.seq_lens[i - 1], seq_arg, a.seq_lens[i], "must ascend");
  }
  require(a.num_heads >= 1 && a.num_heads <= (1 << 16), spell_flag("--num-heads", s), a.num_heads,
          "must be an integer in [1, 65536]");
  require(a.head_dim >= 1 && a.head_dim <= (1 << 16), spell_flag("--head-dim", s), a.head_dim,
          "must be an integer in [1, 65536]");
  require(a.repeats >= 1 && a.repeats <= 1000, spell_flag("--repeats", s), a.repeats,
          "must be an integer in [1, 1000]");
  require(a.fit_from >= 0, spell_flag("--fit-from", s), a.fit_from, "must be an integer >= 0");
  require(std::isfinite(a.max_seconds) && a.max_seconds > 0, spell_flag("--max-seconds", s),
          a.max_seconds, "must be a number of seconds > 0");
  require(a.threads >= 0 && a.threads <= 1024, spell_flag("--threads", s), a.threads,
          "must be auto (0) or an integer in [1, 1024]");

  const int64_t kv_heads = a.num_kv_heads == 0 ? a.num_heads : a.num_kv_heads;
  require(kv_heads >= 1 && kv_heads <= a.num_heads && a.num_heads % kv_heads == 0,
          spell_flag("--num-kv-heads", s), kv_heads,
          fmt::format("must be an integer in [1, {}] that divides {} {} (grouped-query heads, "
                      "contract §2.7)",
                      a.num_heads, spell_flag("--num-heads", s), a.num_heads));
  validate_score_mods(a.mods, 1, a.num_heads);  // FieldError(softcap, alibi_slopes, sinks)

  SweepConfig c;
  c.spec = a.spec;
  c.num_heads = a.num_heads;
  c.num_kv_heads = kv_heads;
  c.mods = a.mods;
  c.head_dim = a.head_dim;
  c.seq_lens = a.seq_lens;
  c.repeats = static_cast<int>(a.repeats);
  c.max_seconds = a.max_seconds;
  c.fit_from = a.fit_from;
  if (a.threads > 0) {
    c.threads = static_cast<int>(a.threads);
  } else {
    const double others = other_runnable(sample_procs_running(5));
    c.threads = auto_threads(others, omp_get_num_procs());
    notes.push_back(fmt::format("{} auto: {} of {} cores ({} other runnable threads)",
                                spell_flag("--threads", s), c.threads, omp_get_num_procs(),
                                fmt_count(others)));
  }

  // serves() is a property of the pattern kind and parameters; the smallest n decides it
  // (and reports a pattern that cannot be built before anything runs).
  const Pattern probe = materialize(c.spec, {1, c.num_heads, a.seq_lens.front(), a.seq_lens.front()});
  const unsigned dense_needed = needed_bits(c.num_heads, c.num_kv_heads, c.mods);
  const unsigned needed = dense_needed | needed_pattern_features(probe);
  c.kernels = choose_kernels(a, probe, needed, notes, s);
  // The baseline runs on the dense pattern with the same heads and modifiers (dense_needed).
  const std::string baseline_arg = spell_flag("--dense-baseline", s);
  if (a.dense_baseline == "auto") {
    if (c.spec.kind != PatternKind::dense || c.spec.causal)
      for (const Kernel& k : kernels())
        if (std::string(k.name) == "cpu_k01_dense_flash") {
          if (serves_bits(k, dense_needed))
            c.dense_baseline = &k;
          else
            notes.push_back(fmt::format("{} auto: {} does not serve {}; no baseline",
                                        baseline_arg, k.name,
                                        feature_names(dense_needed & ~k.features)));
        }
  } else if (a.dense_baseline != "none") {
    c.dense_baseline = &find_kernel(a.dense_baseline);
    require(c.dense_baseline->exact, baseline_arg, a.dense_baseline, "must be an exact kernel");
    require(serves_bits(*c.dense_baseline, dense_needed), baseline_arg, a.dense_baseline,
            "does not serve " + feature_names(dense_needed & ~c.dense_baseline->features) +
                " (contract §2.7-§2.9)");
  }
  if (c.kernels.empty() && c.dense_baseline == nullptr) {
    std::string why;
    for (const std::string& n : notes) why += (why.empty() ? "" : "; ") + n;
    throw InvalidArgument(spell_flag("--impl", s), a.impl, "no kernel to run: " + why);
  }
  return c;
}

LogLogFit fit_loglog(const std::vector<std::pair<double, double>>& xy) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int m = 0;
  for (const auto& [x, y] : xy) {
    if (!(x > 0) || !(y > 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
    const double lx = std::log(x), ly = std::log(y);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly, ++m;
  }
  LogLogFit f;
  f.points = m;
  if (m == 0) return f;
  const double den = m * sxx - sx * sx;
  f.slope = m >= 2 && den > 0 ? (m * sxy - sx * sy) / den : 0.0;
  f.intercept = (sy - f.slope * sx) / m;
  return f;
}

SweepResult run_sweep(const SweepConfig& c) {
  require(!c.seq_lens.empty(), "--seq-len", "none", "give at least one sequence length");
  require(!c.kernels.empty() || c.dense_baseline, "--impl", "none",
          "no kernel to run: none serves this pattern on the chosen target");
  require(c.repeats >= 1, "--repeats", c.repeats, "must be an integer >= 1");
  require(c.max_seconds > 0 && std::isfinite(c.max_seconds), "--max-seconds", c.max_seconds,
          "must be a finite number of seconds > 0");
  require(c.head_dim >= 1, "--head-dim", c.head_dim, "must be an integer >= 1");
  require(c.num_heads >= 1, "--num-heads", c.num_heads, "must be an integer >= 1");
  for (size_t i = 1; i < c.seq_lens.size(); ++i)
    require(c.seq_lens[i] > c.seq_lens[i - 1], "--seq-len", c.seq_lens[i], "must ascend");
  const int64_t kv_heads = c.num_kv_heads == 0 ? c.num_heads : c.num_kv_heads;
  require(kv_heads >= 1 && c.num_heads % kv_heads == 0, "--num-kv-heads", kv_heads,
          "must divide --num-heads (contract §2.7)");

  std::vector<Series> series;
  for (const Kernel* k : c.kernels) series.push_back({k, false, true, {}});
  if (c.dense_baseline) series.push_back({c.dense_baseline, true, true, {}});

  require(c.threads >= 1, "--threads", c.threads, "must be an integer >= 1");
  const ScopedThreads scoped_threads(c.threads);

  SweepResult result;
  double load[3] = {NAN, NAN, NAN};
  if (::getloadavg(load, 3) >= 1) result.load_average_start = load[0];
  std::vector<int> procs;  // every point's procs_running samples
  const auto t_start = Clock::now();
  const size_t total = series.size() * c.seq_lens.size();
  size_t done = 0;
  const PatternSpec dense_spec;  // dense, not causal: the baseline the FLOP bound refers to

  for (size_t ni = 0; ni < c.seq_lens.size(); ++ni) {
    const int64_t n = c.seq_lens[ni];
    std::unique_ptr<Instance> inst, dense_inst;
    for (Series& s : series) {
      if (!s.active) {
        ++done;
        continue;
      }
      std::unique_ptr<Instance>& slot = s.dense ? dense_inst : inst;
      if (!slot)
        slot = std::make_unique<Instance>(make_instance(s.dense ? dense_spec : c.spec,
                                                        c.num_heads, kv_heads, n, c.head_dim,
                                                        c.mods));
      Instance& in = *slot;
      if (c.progress) {
        const double elapsed = seconds_since(t_start);
        // Remaining: each series' predicted points, a point = (repeats + 1) calls; series
        // without a time yet are guessed at the mean time per point so far.
        double remaining = 0.0;
        const double mean_point = done > 0 ? elapsed / static_cast<double>(done) : 0.0;
        for (const Series& r : series) {
          if (!r.active) continue;
          // Series before this one are done at this n; this one and later ones are not.
          const bool done_here = &r < &s;
          for (size_t nj = ni + (done_here ? 1 : 0); nj < c.seq_lens.size(); ++nj) {
            const double p = predict(r, static_cast<double>(c.seq_lens[nj]));
            remaining += std::isfinite(p) ? std::min(p * (c.repeats + 1), c.max_seconds) : mean_point;
          }
        }
        *c.progress << fmt::format("\r[sweep] {:<28} seq_len {:>7} ({}/{})  elapsed {:7.1f} s  "
                                   "remaining ~{:7.1f} s   ",
                                   std::string(s.kernel->name) + (s.dense ? " (dense)" : ""), n,
                                   done + 1, total, elapsed, remaining)
                     << std::flush;
      }
      SweepPoint pt;
      pt.impl = s.kernel->name;
      pt.pattern = s.dense ? "dense" : "pattern";
      pt.seq_len = n;
      pt.flops = attention_flops(in.stats, c.head_dim, c.head_dim);
      PatternStats dense = in.stats;
      dense.nnz = in.stats.dense_pairs;
      pt.dense_flops = attention_flops(dense, c.head_dim, c.head_dim);
      pt.density = in.stats.density;
      ++done;
      if (!s.kernel->serves(*in.pattern)) {
        s.active = false;
        result.notes.push_back(fmt::format("{}: does not serve the pattern at seq_len {}; not run",
                                           s.kernel->name, n));
        continue;
      }
      if (!s.kernel->serves_features(in.problem)) {
        s.active = false;
        result.notes.push_back(fmt::format(
            "{}: does not serve {} at seq_len {}; not run", s.kernel->name,
            feature_names(needed_features(in.problem) & ~s.kernel->features), n));
        continue;
      }
      if (!in.oracle) in.oracle = std::make_unique<api::Oracle>(api::make_oracle(in.problem));
      pt.oracle_full = in.oracle->full;

      // Who else wants the cores, just before this point (the last point's threads idle).
      const std::vector<int> here = sample_procs_running(3);
      procs.insert(procs.end(), here.begin(), here.end());
      pt.others_runnable = other_runnable(here);

      // The harness: one call, checked, its extra heap measured, never timed; then, only
      // when it passed, the kernel alone `repeats` times, each call on both clocks (a fresh
      // Output per call, as the harness's own loop).
      api::TimingPlan plan;
      plan.repeats = c.repeats;
      plan.heap = c.heap;
      std::vector<double> wall, cpu;
      plan.timed_section = [&] {
        for (int r = 0; r < c.repeats; ++r) {
          Output fresh;
          const double c0 = process_cpu_seconds();
          const auto t = Clock::now();
          s.kernel->run(in.problem, fresh);
          wall.push_back(seconds_since(t));
          cpu.push_back(process_cpu_seconds() - c0);
        }
      };
      api::Measurement m;
      try {
        m = api::measure(*s.kernel, in.problem, *in.oracle, plan);
        pt.peak_bytes = m.peak_bytes;
        pt.failure = m.check.failure;
      } catch (const std::exception& e) {
        if (no_device(e)) {
          s.active = false;
          result.skipped.emplace_back(s.kernel->name, e.what());
          result.notes.push_back(fmt::format("{}: skipped: {}", s.kernel->name, e.what()));
          continue;
        }
        pt.failure = std::string("kernel threw: ") + e.what();
      }
      if (!pt.failure.empty()) {
        pt.validated = false;
        s.active = false;
        ++result.failures;
        result.points.push_back(pt);
        result.notes.push_back(fmt::format(
            "{}: FAILED validation at seq_len {} ({}): not timed, not run at larger seq_len",
            s.kernel->name, n, pt.failure));
        continue;
      }
      pt.validated = true;
      pt.repeats = static_cast<int>(wall.size());
      pt.median_s = median_of(wall);
      pt.min_s = *std::min_element(wall.begin(), wall.end());
      pt.max_s = *std::max_element(wall.begin(), wall.end());
      pt.cpu_median_s = median_of(cpu);
      pt.cpu_min_s = *std::min_element(cpu.begin(), cpu.end());
      pt.cpu_max_s = *std::max_element(cpu.begin(), cpu.end());
      s.timed.emplace_back(static_cast<double>(n), pt.median_s);
      result.points.push_back(pt);

      // Would the next point exceed the budget?
      if (ni + 1 < c.seq_lens.size()) {
        const int64_t next = c.seq_lens[ni + 1];
        const double per_call = predict(s, static_cast<double>(next));
        const double point = per_call * (c.repeats + 1);
        if (point > c.max_seconds) {
          s.active = false;
          const LogLogFit fit = fit_loglog(s.timed);
          result.notes.push_back(fmt::format(
              "{}{}: stopped at seq_len {}: seq_len {} would take ~{:.3g} s per call x {} calls "
              "= ~{:.3g} s > --max-seconds {} (extrapolated with slope {:.2f})",
              s.kernel->name, s.dense ? " (dense baseline)" : "", n, next, per_call,
              c.repeats + 1, point, c.max_seconds, fit.points >= 2 ? fit.slope : 2.0));
        }
      }
    }
  }
  if (c.progress) *c.progress << "\n";
  result.load = judge_load(other_runnable(procs), result.load_average_start,
                           omp_get_num_procs(), c.threads);
  return result;
}

const char* measure_name(TimeMeasure m) { return m == TimeMeasure::cpu ? "CPU time" : "wall time"; }
const char* measure_key(TimeMeasure m) { return m == TimeMeasure::cpu ? "cpu" : "wall"; }

int parse_procs_running(const std::string& proc_stat) {
  std::istringstream in(proc_stat);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("procs_running ", 0) == 0) {
      const std::string v = line.substr(14);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
        return -1;
      return std::stoi(v);
    }
  return -1;
}

double other_runnable(const std::vector<int>& procs_running) {
  double sum = 0;
  int m = 0;
  for (int p : procs_running)
    if (p >= 0) sum += std::max(p - 1, 0), ++m;
  return m > 0 ? sum / m : NAN;
}

std::vector<int> sample_procs_running(int samples) {
  std::vector<int> out;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int i = 0; i < samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::ifstream f("/proc/stat");
    if (!f) return {};
    std::stringstream text;
    text << f.rdbuf();
    const int p = parse_procs_running(text.str());
    if (p < 0) return {};
    out.push_back(p);
  }
  return out;
}

LoadVerdict judge_load(double others_procs, double load_average, int cores, int threads) {
  LoadVerdict v;
  v.cores = std::max(cores, 1);
  v.threads = std::max(threads, 1);
  if (std::isfinite(others_procs)) {
    v.others = others_procs;
    v.source = "procs_running";
  } else if (std::isfinite(load_average)) {
    v.others = load_average;
    v.source = "load average";
  }
  v.busy = std::isfinite(v.others) && v.others > v.cores - v.threads + 0.5;
  v.measure = v.busy ? TimeMeasure::cpu : TimeMeasure::wall;
  return v;
}

std::string load_line(const LoadVerdict& v) {
  return fmt::format("slopes fitted on {}: {} other runnable threads ({}) beside {} sweep "
                     "thread{} on {} cores{}",
                     measure_name(v.measure), fmt_count(v.others), v.source, v.threads,
                     v.threads == 1 ? "" : "s", v.cores, v.busy ? ": busy" : "");
}

std::string load_warning(const LoadVerdict& v) {
  if (!v.busy) return "";
  std::string w = fmt::format("warning: busy machine: {} other runnable threads want the {} cores "
                              "beside the sweep's {}; wall times count the scheduler's slices, "
                              "so the slopes are fitted on CPU time",
                              fmt_count(v.others), v.cores, v.threads);
  // A thread whose partner waits for a core spins at the region's end: CPU time, not work.
  if (v.threads > 1)
    w += fmt::format(", which with {} threads counts their spinning at barriers too unless "
                     "OMP_WAIT_POLICY=passive (or --threads 1)",
                     v.threads);
  return w;
}

nlohmann::json load_json(const LoadVerdict& v) {
  return {{"busy", v.busy},
          {"fit_measure", measure_key(v.measure)},
          {"others_runnable", std::isfinite(v.others) ? nlohmann::json(v.others) : nlohmann::json(nullptr)},
          {"source", v.source},
          {"cores", v.cores},
          {"threads", v.threads}};
}

int auto_threads(double others, int cores) {
  cores = std::max(cores, 1);
  if (!std::isfinite(others)) return cores;
  const double free = std::round(cores - others);
  return static_cast<int>(std::clamp(free, 1.0, static_cast<double>(cores)));
}

double fit_seconds(const SweepPoint& p, TimeMeasure m) {
  return m == TimeMeasure::cpu ? p.cpu_median_s : p.median_s;
}

nlohmann::json sweep_fits(const SweepResult& r, int64_t fit_from) {
  using XY = std::vector<std::pair<double, double>>;
  std::map<std::pair<std::string, std::string>, std::pair<XY, XY>> xy;  // (time, flops)
  std::vector<std::pair<std::string, std::string>> order;
  const TimeMeasure m = r.load.measure;
  for (const SweepPoint& p : r.points) {
    const auto key = std::make_pair(p.impl, p.pattern);
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    if (p.validated && p.seq_len >= fit_from) {
      xy[key].first.emplace_back(double(p.seq_len), fit_seconds(p, m));
      xy[key].second.emplace_back(double(p.seq_len), p.pattern == "dense" ? p.dense_flops : p.flops);
    }
  }
  const auto slope_json = [](const LogLogFit& f) {
    return f.points >= 2 ? nlohmann::json(f.slope) : nlohmann::json(nullptr);
  };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& key : order) {
    const LogLogFit f = fit_loglog(xy[key].first);
    out.push_back({{"impl", key.first},
                   {"pattern", key.second},
                   {"slope", slope_json(f)},
                   {"flop_slope", slope_json(fit_loglog(xy[key].second))},
                   {"measure", measure_key(m)},
                   {"points", f.points}});
  }
  return out;
}

nlohmann::json points_json(const std::vector<SweepPoint>& points) {
  nlohmann::json a = nlohmann::json::array();
  for (const SweepPoint& p : points) {
    nlohmann::json j = {{"impl", p.impl},
                        {"pattern", p.pattern},
                        {"seq_len", p.seq_len},
                        {"validated", p.validated},
                        {"oracle", p.oracle_full ? "full" : "sampled rows"},
                        {"repeats", p.repeats},
                        {"peak_bytes", p.peak_bytes},
                        {"flops", p.flops},
                        {"dense_flops", p.dense_flops},
                        {"density", p.density}};
    j["others_runnable"] =
        std::isfinite(p.others_runnable) ? nlohmann::json(p.others_runnable) : nlohmann::json(nullptr);
    if (p.validated) {
      j["median_s"] = p.median_s;
      j["min_s"] = p.min_s;
      j["max_s"] = p.max_s;
      j["cpu_median_s"] = p.cpu_median_s;
      j["cpu_min_s"] = p.cpu_min_s;
      j["cpu_max_s"] = p.cpu_max_s;
    } else {
      j["median_s"] = j["min_s"] = j["max_s"] = nullptr;  // never timed
      j["cpu_median_s"] = j["cpu_min_s"] = j["cpu_max_s"] = nullptr;
      j["failure"] = p.failure;
    }
    a.push_back(j);
  }
  return a;
}

std::string points_csv(const std::vector<SweepPoint>& points) {
  std::string s =
      "impl,pattern,seq_len,validated,median_s,min_s,max_s,peak_bytes,flops,dense_flops,density,"
      "cpu_median_s,cpu_min_s,cpu_max_s,others_runnable\n";
  for (const SweepPoint& p : points) {
    const auto t = [&](double v) { return p.validated ? fmt::format("{:.9g}", v) : std::string(); };
    const std::string others =
        std::isfinite(p.others_runnable) ? fmt::format("{:.3g}", p.others_runnable) : "";
    s += fmt::format("{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{},{},{},{}\n", p.impl,
                     p.pattern, p.seq_len, p.validated ? 1 : 0, t(p.median_s), t(p.min_s),
                     t(p.max_s), p.peak_bytes, p.flops, p.dense_flops, p.density,
                     t(p.cpu_median_s), t(p.cpu_min_s), t(p.cpu_max_s), others);
  }
  return s;
}

nlohmann::json run_context() {
  nlohmann::json j;
  utsname u{};
  if (::uname(&u) == 0)
    j["machine"] = {{"system", u.sysname}, {"release", u.release}, {"arch", u.machine},
                    {"host", u.nodename}};
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      j["machine"]["cpu"] = line.substr(line.find(':') + 2);
      break;
    }
  j["machine"]["cores_online"] = omp_get_num_procs();
  j["omp_threads"] = omp_get_max_threads();
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  j["omp_wait_policy"] = policy ? policy : "(unset)";
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date"] = date;
  std::string commit = "unknown";
  if (FILE* git = ::popen("git describe --always --dirty --abbrev=40 2>/dev/null", "r")) {
    char buf[64] = {0};
    if (std::fgets(buf, sizeof buf, git)) commit = std::string(buf, std::strcspn(buf, "\n"));
    if (::pclose(git) != 0) commit = "unknown";
  }
  j["commit"] = commit;
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) j["load_average"] = {load[0], load[1], load[2]};
  return j;
}

}  // namespace sparseattn::api
