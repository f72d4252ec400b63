// The sweep engine (cli/sweep.h). Check-then-time is the harness's (api/measure.h), the
// heap count api/alloc_tracker.h's: one harness for benchmarks and sweeps alike.
#include "cli/sweep.h"

#include <sys/utsname.h>
#include <omp.h>

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

#include "api/alloc_tracker.h"
#include "api/measure.h"
#include "cli/figures.h"
#include "core/error.h"
#include "core/seeded_inputs.h"

namespace sparseattn::cli {


namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One problem (pattern, inputs, oracle) per seq_len, shared by every kernel at that n.
struct Instance {
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  PatternStats stats;
  std::unique_ptr<api::Oracle> oracle;  // built on first use
};

Instance make_instance(const PatternSpec& spec, int64_t heads, int64_t n, int64_t head_dim) {
  Instance in;
  in.pattern = std::make_unique<Pattern>(materialize(spec, {1, heads, n, n}));
  const uint64_t seed = testing_inputs::seed_of("sweep/" + std::to_string(n));
  // The same q, k, v for the pattern and the dense baseline (seeded by n only).
  in.problem = make_problem(testing_inputs::random_tensor({1, heads, n, head_dim}, seed),
                            testing_inputs::random_tensor({1, heads, n, head_dim}, seed + 1),
                            testing_inputs::random_tensor({1, heads, n, head_dim}, seed + 2),
                            *in.pattern, nullptr);
  in.stats = pattern_stats(*in.pattern);
  return in;
}

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

}  // namespace

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

  std::vector<Series> series;
  for (const Kernel* k : c.kernels) series.push_back({k, false, true, {}});
  if (c.dense_baseline) series.push_back({c.dense_baseline, true, true, {}});

  SweepResult result;
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
        slot = std::make_unique<Instance>(
            make_instance(s.dense ? dense_spec : c.spec, c.num_heads, n, c.head_dim));
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
      if (!in.oracle) in.oracle = std::make_unique<api::Oracle>(api::make_oracle(in.problem));
      pt.oracle_full = in.oracle->full;

      // The harness: one call, checked, its extra heap measured, never timed; then, only
      // when it passed, the kernel alone `repeats` times.
      api::TimingPlan plan;
      plan.repeats = c.repeats;
      plan.heap = api::heap_probe();
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
      pt.repeats = static_cast<int>(m.seconds.size());
      pt.median_s = m.median();
      pt.min_s = m.best();
      pt.max_s = m.worst_time();
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
  return result;
}

nlohmann::json sweep_fits(const SweepResult& r, int64_t fit_from) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> xy;
  std::vector<std::pair<std::string, std::string>> order;
  for (const SweepPoint& p : r.points) {
    const auto key = std::make_pair(p.impl, p.pattern);
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    if (p.validated && p.seq_len >= fit_from) xy[key].emplace_back(double(p.seq_len), p.median_s);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& key : order) {
    const LogLogFit f = fit_loglog(xy[key]);
    out.push_back({{"impl", key.first},
                   {"pattern", key.second},
                   {"slope", f.points >= 2 ? nlohmann::json(f.slope) : nlohmann::json(nullptr)},
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
    if (p.validated) {
      j["median_s"] = p.median_s;
      j["min_s"] = p.min_s;
      j["max_s"] = p.max_s;
    } else {
      j["median_s"] = j["min_s"] = j["max_s"] = nullptr;  // never timed
      j["failure"] = p.failure;
    }
    a.push_back(j);
  }
  return a;
}

std::string points_csv(const std::vector<SweepPoint>& points) {
  std::string s =
      "impl,pattern,seq_len,validated,median_s,min_s,max_s,peak_bytes,flops,dense_flops,density\n";
  for (const SweepPoint& p : points) {
    const auto t = [&](double v) { return p.validated ? fmt::format("{:.9g}", v) : std::string(); };
    s += fmt::format("{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g}\n", p.impl, p.pattern, p.seq_len,
                     p.validated ? 1 : 0, t(p.median_s), t(p.min_s), t(p.max_s), p.peak_bytes,
                     p.flops, p.dense_flops, p.density);
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

std::vector<std::string> write_sweep_figures(const SweepResult& r, int64_t fit_from,
                                             double peak_gflops, const std::string& title,
                                             const std::string& dir, std::string* why) {
  std::vector<std::string> written;
  if (!gnuplot_available(why)) return written;
  // Series in measured order, validated points only.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const SweepPoint*>> pts;
  for (const SweepPoint& p : r.points) {
    const auto key = std::make_pair(p.impl, p.pattern);
    if (!pts.count(key)) order.push_back(key);
    pts[key];
    if (p.validated) pts[key].push_back(&p);
  }
  auto label = [](const std::pair<std::string, std::string>& key) {
    return key.second == "dense" ? key.first + " (dense)" : key.first;
  };
  // The title: the pattern, wrapped at its heads ("; ") so a per-head mix stays readable.
  std::string wrapped, line;
  size_t start = 0;
  while (start < title.size()) {
    size_t end = title.find("; ", start);
    end = end == std::string::npos ? title.size() : end + 2;
    const std::string piece = title.substr(start, end - start);
    if (!line.empty() && line.size() + piece.size() > 110) wrapped += line + "\n", line.clear();
    line += piece;
    start = end;
  }
  wrapped += line;
  // Double quotes: gnuplot then reads \n as a line break; noenhanced: "_" is literal.
  std::string quoted;
  for (char ch : wrapped) quoted += ch == '\n' ? std::string("\\n") : ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  const std::string head = "set title \"" + quoted + "\" noenhanced font ',10'\n" +
                           "set logscale x 2\nset xlabel 'seq\\_len'\n";

  // 1. time vs n, log-log, fitted slope in the legend.
  write_figure(dir, "time_vs_seq_len", [&](Gnuplot& gp) {
    gp << head << "set logscale y 10\nset ylabel 'seconds per call (median)'\n";
    if (fit_from > 0) gp << "set key title 'slopes fitted on seq\\_len >= " << fit_from << "'\n";
    std::vector<FigureLine> lines;
    for (const auto& key : order) {
      std::vector<std::pair<double, double>> xy, fit_xy;
      for (const SweepPoint* p : pts[key]) {
        xy.emplace_back(double(p->seq_len), p->median_s);
        if (p->seq_len >= fit_from) fit_xy.emplace_back(double(p->seq_len), p->median_s);
      }
      const LogLogFit f = fit_loglog(fit_xy);
      lines.emplace_back(label(key) + (f.points >= 2 ? fmt::format("  slope {:.2f}", f.slope)
                                                     : std::string("  (one point)")),
                         xy);
    }
    plot_lines(gp, lines);
  });
  written.push_back("time_vs_seq_len");

  // 2. extra heap vs n.
  write_figure(dir, "memory_vs_seq_len", [&](Gnuplot& gp) {
    gp << head << "set logscale y 10\nset ylabel 'extra heap per call (bytes, outputs included)'\n";
    std::vector<FigureLine> lines;
    for (const auto& key : order) {
      std::vector<std::pair<double, double>> xy;
      for (const SweepPoint* p : pts[key])
        if (p->peak_bytes > 0) xy.emplace_back(double(p->seq_len), double(p->peak_bytes));
      const LogLogFit f = fit_loglog(xy);
      lines.emplace_back(label(key) + (f.points >= 2 ? fmt::format("  slope {:.2f}", f.slope) : ""), xy);
    }
    plot_lines(gp, lines);
  });
  written.push_back("memory_vs_seq_len");

  // 3. speedup over the dense baseline vs the FLOP bound dense_flops / flops.
  write_figure(dir, "speedup_vs_dense", [&](Gnuplot& gp) {
    gp << head << "set logscale y 2\nset ylabel 'time(dense baseline) / time(kernel)'\n";
    std::map<int64_t, double> dense_t;
    std::string dense_name;
    for (const auto& key : order)
      if (key.second == "dense") {
        dense_name = key.first;
        for (const SweepPoint* p : pts[key]) dense_t[p->seq_len] = p->median_s;
      }
    std::vector<FigureLine> lines;
    std::vector<std::string> styles;
    std::map<int64_t, double> bound;
    for (const auto& key : order) {
      if (key.second == "dense") continue;
      std::vector<std::pair<double, double>> xy;
      for (const SweepPoint* p : pts[key]) {
        bound[p->seq_len] = p->dense_flops / std::max(p->flops, 1.0);
        if (dense_t.count(p->seq_len)) xy.emplace_back(double(p->seq_len), dense_t[p->seq_len] / p->median_s);
      }
      lines.emplace_back(key.first + " over " + (dense_name.empty() ? "(no dense baseline)" : dense_name), xy);
      styles.emplace_back();
    }
    std::vector<std::pair<double, double>> bxy(bound.begin(), bound.end());
    lines.emplace_back("FLOP bound dense_flops / flops", std::vector<std::pair<double, double>>(
                                                             bxy.begin(), bxy.end()));
    styles.emplace_back("lines lw 2 dt 2 lc rgb 'black'");
    plot_lines(gp, lines, styles);
  });
  written.push_back("speedup_vs_dense");

  // 4. fraction of the measured FMA peak (pattern FLOPs / time / peak).
  write_figure(dir, "fraction_of_peak", [&](Gnuplot& gp) {
    gp << head
       << fmt::format("set ylabel 'GFLOP/s / measured FMA peak ({:.1f} GFLOP/s)'\n", peak_gflops)
       << "set key below\n";  // the lines span the whole height: no corner is free
    std::vector<FigureLine> lines;
    for (const auto& key : order) {
      std::vector<std::pair<double, double>> xy;
      for (const SweepPoint* p : pts[key])
        if (peak_gflops > 0)
          xy.emplace_back(double(p->seq_len), p->flops / p->median_s / 1e9 / peak_gflops);
      lines.emplace_back(label(key), xy);
    }
    plot_lines(gp, lines);
  });
  written.push_back("fraction_of_peak");
  return written;
}

}  // namespace sparseattn::cli
