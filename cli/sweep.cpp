// The figures of `sparseattn sweep` (cli/sweep.h); the engine is api/sweep.cpp.
#include "cli/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/figures.h"

namespace sparseattn::cli {

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

  // 1. time vs n, log-log, fitted slope in the legend: on the clock the fits use (wall time,
  // or CPU time on a busy machine: api/sweep.h judge_load).
  const api::TimeMeasure measure = r.load.measure;
  write_figure(dir, "time_vs_seq_len", [&](Gnuplot& gp) {
    gp << head << "set logscale y 10\nset ylabel '"
       << (measure == api::TimeMeasure::cpu ? "CPU seconds per call (median, all threads; busy machine)"
                                            : "seconds per call (median wall time)")
       << "'\n";
    if (fit_from > 0) gp << "set key title 'slopes fitted on seq\\_len >= " << fit_from << "'\n";
    std::vector<FigureLine> lines;
    for (const auto& key : order) {
      std::vector<std::pair<double, double>> xy, fit_xy;
      for (const SweepPoint* p : pts[key]) {
        const double t = api::fit_seconds(*p, measure);
        xy.emplace_back(double(p->seq_len), t);
        if (p->seq_len >= fit_from) fit_xy.emplace_back(double(p->seq_len), t);
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
