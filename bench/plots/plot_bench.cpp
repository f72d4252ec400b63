// plot_bench — the figures of docs/benchmarks.md, drawn from bench_cpu's JSON with
// gnuplot-iostream (PNG via pngcairo and SVG), plus the CPU performance targets table as
// Markdown. Figures are derived from the C++ benchmark output only, never recomputed.
//
//   build/plot_bench BENCH_JSON OUT_DIR        (make plots)
//
// Figures (head_dim 64; each pattern drawn with its specialized kernel from the registry
// ladder — k01 dense, k02 window, k03 dilated window, k04 Longformer, k05 BigBird):
//   time_vs_seq_len      log-log time per call; legend: slope of log t over log n fitted on
//                        seq_len >= 2048 (1 = linear, 2 = quadratic)
//   gflops_vs_seq_len    GFLOP/s on computed FLOPs; right axis: fraction of measured peak
//   efficiency_vs_seq_len  the same per CPU-second, over one running core's peak
//   memory_vs_seq_len    extra heap per call (outputs, packed panels), log-log, with slope
//   speedup_vs_dense     time(k01 dense) / time(kernel) against the FLOP-reduction bound
//                        dense_flops / flops
//   ladder_time          every kernel (k06 and the serial references too) per pattern
// OUT_DIR/targets.md: the targets as measured ratios.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <gnuplot-iostream.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Point {
  double n, ms, gflops, frac_peak, peak_bytes, flops, dense_flops;
  double cpu_frac_peak;  // per CPU-second vs one running core's peak (bench_cpu.cpp)
};
// (kernel, pattern, head_dim) -> points ascending in n
using Series = std::map<std::string, std::vector<Point>>;

std::string key_of(const std::string& kernel, const std::string& pattern, int head_dim) {
  return kernel + "|" + pattern + "|" + std::to_string(head_dim);
}

struct Data {
  Series series;
  double peak_gflops = 0.0, peak_cpu_gflops = 0.0;
  std::string date, host_info;
};

Data load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  const nlohmann::json j = nlohmann::json::parse(in);
  Data d;
  d.peak_gflops = std::stod(j["context"].value("peak_fma_gflops", "0"));
  d.peak_cpu_gflops = std::stod(j["context"].value("peak_fma_cpu_gflops", "0"));
  d.date = j["context"].value("date", "");
  for (const auto& b : j["benchmarks"]) {
    if (b.value("run_type", "") != "iteration" || b.value("error_occurred", false)) continue;
    const std::string name = b.value("name", "");
    const size_t s1 = name.find('/'), s2 = name.find('/', s1 + 1);
    if (s1 == std::string::npos || s2 == std::string::npos || !b.contains("seq_len")) continue;
    const std::string kernel = name.substr(0, s1), pattern = name.substr(s1 + 1, s2 - s1 - 1);
    const int head_dim = static_cast<int>(b["head_dim"].get<double>());
    double ms = b["real_time"].get<double>();
    const std::string unit = b.value("time_unit", "ms");
    if (unit == "us") ms /= 1e3;
    if (unit == "ns") ms /= 1e6;
    if (unit == "s") ms *= 1e3;
    d.series[key_of(kernel, pattern, head_dim)].push_back(
        {b["seq_len"].get<double>(), ms, b["GFLOP/s"].get<double>(), b["frac_peak"].get<double>(),
         b["peak_bytes"].get<double>(), b["flops"].get<double>(), b["dense_flops"].get<double>(),
         b.value("cpu_frac_peak", NAN)});
  }
  for (auto& [k, v] : d.series)
    std::sort(v.begin(), v.end(), [](const Point& a, const Point& b) { return a.n < b.n; });
  return d;
}

// Least-squares slope of log(y) over log(n) for points with n >= n_min.
double loglog_slope(const std::vector<Point>& pts, double (*y)(const Point&), double n_min) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int m = 0;
  for (const Point& p : pts) {
    if (p.n < n_min || y(p) <= 0) continue;
    const double lx = std::log(p.n), ly = std::log(y(p));
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly, ++m;
  }
  if (m < 2) return NAN;
  return (m * sxy - sx * sy) / (m * sxx - sx * sx);
}
double y_ms(const Point& p) { return p.ms; }
double y_bytes(const Point& p) { return p.peak_bytes; }

const std::vector<std::pair<std::string, std::string>> kShown = {
    {"cpu_k01_dense_flash", "dense"},
    {"cpu_k02_window_band", "window_w256"},
    {"cpu_k03_window_dilated", "window_w128_d2"},
    {"cpu_k04_longformer", "longformer_w256_g2"},
    {"cpu_k05_bigbird_blocks", "bigbird_b64_r3"},
};

const std::vector<Point>* find(const Data& d, const std::string& kernel, const std::string& pattern,
                               int head_dim = 64) {
  auto it = d.series.find(key_of(kernel, pattern, head_dim));
  return it == d.series.end() || it->second.empty() ? nullptr : &it->second;
}

// One figure, written twice: PNG (pngcairo) and SVG. `body` sends the plot commands.
template <class Body>
void figure(const std::string& out_dir, const std::string& name, Body&& body) {
  for (const auto& [term, ext] : {std::pair<std::string, std::string>{"pngcairo size 960,640 font ',11'", "png"},
                                  {"svg size 960,640 font 'Helvetica,13' background '#ffffff'", "svg"}}) {
    Gnuplot gp("gnuplot");
    gp << "set terminal " << term << "\n";
    gp << "set output '" << out_dir << "/" << name << "." << ext << "'\n";
    gp << "set grid\nset key top left box opaque\n";
    body(gp);
    gp << "unset output\n";
  }
  std::cout << "wrote " << out_dir << "/" << name << ".{png,svg}\n";
}

std::vector<std::pair<double, double>> xy(const std::vector<Point>& pts, double (*y)(const Point&)) {
  std::vector<std::pair<double, double>> v;
  for (const Point& p : pts) v.emplace_back(p.n, y(p));
  return v;
}

void plot_series(Gnuplot& gp, const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& lines,
                 const std::string& extra_style = "linespoints lw 2 pt 7") {
  gp << "plot ";
  for (size_t i = 0; i < lines.size(); ++i)
    gp << (i ? ", " : "") << "'-' with " << extra_style << " title '" << lines[i].first << "'";
  gp << "\n";
  for (const auto& l : lines) gp.send1d(l.second);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: plot_bench BENCH_JSON OUT_DIR\n";
    return 2;
  }
  const std::string out = argv[2];
  Data d;
  try {
    d = load(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "plot_bench: error: " << e.what() << "\n";
    return 2;
  }

  // 1. time vs seq_len, slope in the legend.
  figure(out, "time_vs_seq_len", [&](Gnuplot& gp) {
    gp << "set logscale xy 2\nset xlabel 'seq\\_len'\nset ylabel 'time per call (ms)'\n"
       << "set title 'Time per call, head\\_dim 64, batch 1, 1 head, 2 OpenMP threads'\n";
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> lines;
    for (const auto& [k, p] : kShown)
      if (const auto* s = find(d, k, p))
        lines.push_back({fmt::format("{} {} (slope {:.2f})", k.substr(4), p, loglog_slope(*s, y_ms, 2048)),
                         xy(*s, y_ms)});
    for (auto& l : lines)
      for (char& c : l.first) if (c == '_') c = ' ';
    plot_series(gp, lines);
  });

  // 2. GFLOP/s and fraction of peak.
  figure(out, "gflops_vs_seq_len", [&](Gnuplot& gp) {
    const double peak = d.peak_gflops;
    gp << "set logscale x 2\nset xlabel 'seq\\_len'\nset ylabel 'GFLOP/s (computed FLOPs)'\n"
       << "set yrange [0:" << peak * 1.05 << "]\nset y2range [0:1.05]\nset y2tics\n"
       << "set y2label 'fraction of measured FMA peak'\n"
       << "set title 'Throughput; measured FMA peak " << fmt::format("{:.1f}", peak)
       << " GFLOP/s (2 threads)'\n";
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> lines;
    for (const auto& [k, p] : kShown)
      if (const auto* s = find(d, k, p))
        lines.push_back({k.substr(4) + " " + p, xy(*s, [](const Point& q) { return q.gflops; })});
    for (auto& l : lines)
      for (char& c : l.first) if (c == '_') c = ' ';
    gp << "set arrow from graph 0, first " << peak << " to graph 1, first " << peak
       << " nohead dt 2 lw 2\n";
    plot_series(gp, lines);
  });

  // 2b. efficiency per CPU-second (load-independent view on a shared machine).
  figure(out, "efficiency_vs_seq_len", [&](Gnuplot& gp) {
    gp << "set logscale x 2\nset xlabel 'seq\\_len'\nset yrange [0:1]\n"
       << "set ylabel 'fraction of one running core''s FMA peak'\n"
       << "set title 'Efficiency per CPU-second (peak " << fmt::format("{:.1f}", d.peak_cpu_gflops)
       << " GFLOP/s per core)'\n";
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> lines;
    for (const auto& [k, p] : kShown)
      if (const auto* s = find(d, k, p))
        lines.push_back({k.substr(4) + " " + p, xy(*s, [](const Point& q) { return q.cpu_frac_peak; })});
    for (auto& l : lines)
      for (char& c : l.first) if (c == '_') c = ' ';
    plot_series(gp, lines);
  });

  // 3. memory.
  figure(out, "memory_vs_seq_len", [&](Gnuplot& gp) {
    gp << "set logscale xy 2\nset xlabel 'seq\\_len'\nset ylabel 'extra heap per call (bytes)'\n"
       << "set format y '%.0s%cB'\nset title 'Peak extra memory per call (outputs + packed panels)'\n";
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> lines;
    for (const auto& [k, p] : kShown)
      if (const auto* s = find(d, k, p))
        lines.push_back({fmt::format("{} {} (slope {:.2f})", k.substr(4), p, loglog_slope(*s, y_bytes, 2048)),
                         xy(*s, y_bytes)});
    for (auto& l : lines)
      for (char& c : l.first) if (c == '_') c = ' ';
    plot_series(gp, lines);
  });

  // 4. speedup vs dense against the FLOP-reduction bound.
  const auto* dense = find(d, "cpu_k01_dense_flash", "dense");
  figure(out, "speedup_vs_dense", [&](Gnuplot& gp) {
    gp << "set logscale xy 2\nset xlabel 'seq\\_len'\nset ylabel 'speedup over k01 dense'\n"
       << "set title 'Speedup over fused dense (solid) vs FLOP-reduction bound (dashed)'\n";
    std::vector<std::string> titles;
    std::vector<std::vector<std::pair<double, double>>> data;
    for (size_t i = 1; i < kShown.size() && dense; ++i) {
      const auto* s = find(d, kShown[i].first, kShown[i].second);
      if (!s) continue;
      std::vector<std::pair<double, double>> speed, bound;
      for (const Point& p : *s)
        for (const Point& q : *dense)
          if (q.n == p.n) {
            speed.emplace_back(p.n, q.ms / p.ms);
            bound.emplace_back(p.n, p.dense_flops / p.flops);
          }
      std::string t = kShown[i].first.substr(4) + " " + kShown[i].second;
      for (char& c : t) if (c == '_') c = ' ';
      titles.push_back(t);
      data.push_back(speed);
      titles.push_back(t + " bound");
      data.push_back(bound);
    }
    gp << "plot ";
    for (size_t i = 0; i < titles.size(); ++i)
      gp << (i ? ", " : "") << "'-' with linespoints lw 2 pt 7 lc " << (i / 2 + 1)
         << (i % 2 ? " dt 2" : " dt 1") << " title '" << titles[i] << "'";
    gp << "\n";
    for (const auto& v : data) gp.send1d(v);
  });

  // 5. the whole ladder per pattern (every kernel, references included). One colour per
  // kernel in every panel, the legend alone in the sixth panel (it covered the curves when
  // each panel had its own), x tics every 4x with short labels (512 ... 64k ran together).
  {
    std::vector<std::string> kernels;  // every kernel shown, in the order of the series map
    for (const auto& [k0, pattern] : kShown)
      for (const auto& [key, pts] : d.series) {
        if (key.find("|" + pattern + "|64") == std::string::npos) continue;
        const std::string k = key.substr(0, key.find('|'));
        if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
      }
    std::sort(kernels.begin(), kernels.end());
    auto label = [](std::string t) {
      for (char& c : t) if (c == '_') c = ' ';
      return t;
    };
    auto style = [&](const std::string& k) {
      const size_t i = static_cast<size_t>(std::find(kernels.begin(), kernels.end(), k) - kernels.begin());
      // References dashed, optimized kernels solid; colours from one fixed list.
      static const char* colours[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                      "#e6ab02", "#a6761d", "#666666", "#1f78b4", "#e31a1c",
                                      "#6a3d9a", "#000000", "#b15928", "#fb9a99"};
      const bool reference = k.rfind("cpu_", 0) != 0;
      return fmt::format("linespoints lw 2 pt {} ps 0.7 lc rgb '{}' dt {}", reference ? 6 : 7,
                         colours[i % (sizeof colours / sizeof *colours)], reference ? 2 : 1);
    };
    for (const auto& [term, ext] :
         {std::pair<std::string, std::string>{"pngcairo size 1500,900 font ',12'", "png"},
          {"svg size 1500,900 font 'Helvetica,13' background '#ffffff'", "svg"}}) {
      Gnuplot gp("gnuplot");
      gp << "set terminal " << term << "\nset output '" << out << "/ladder_time." << ext << "'\n"
         << "set grid\nset multiplot layout 2,3 title 'Every registry kernel, head\\_dim 64: time "
            "per call (ms) against seq\\_len; dashed = serial float64 references'\n"
         << "set logscale xy 2\nset format y '%g'\nunset key\nset xlabel 'seq\\_len'\n"
         << "set ylabel 'ms per call'\n"
         << "set xtics ('512' 512, '2k' 2048, '8k' 8192, '32k' 32768)\n"
         << "set mxtics 4\nset xrange [400:80000]\n";
      for (const auto& [k0, pattern] : kShown) {
        gp << "set title '" << pattern << "' noenhanced\nplot ";
        std::vector<std::vector<std::pair<double, double>>> data;
        for (const auto& [key, pts] : d.series) {
          if (key.find("|" + pattern + "|64") == std::string::npos) continue;
          const std::string k = key.substr(0, key.find('|'));
          gp << (data.empty() ? "" : ", ") << "'-' with " << style(k) << " notitle";
          data.push_back(xy(pts, y_ms));
        }
        gp << "\n";
        for (const auto& v : data) gp.send1d(v);
      }
      // The sixth panel: the legend only.
      gp << "unset title\nunset xlabel\nunset ylabel\nunset logscale\nunset grid\nunset border\n"
         << "unset tics\nunset mxtics\nset xrange [0:1]\nset yrange [0:1]\n"
         << "set key center center vertical Left reverse noenhanced spacing 1.3\nplot ";
      for (size_t i = 0; i < kernels.size(); ++i)
        gp << (i ? ", " : "") << "NaN with " << style(kernels[i]) << " title '" << label(kernels[i])
           << "'";
      gp << "\nunset multiplot\nunset output\n";
    }
    std::cout << "wrote " << out << "/ladder_time.{png,svg}\n";
  }

  // The CPU performance targets (docs/benchmarks.md), as measured ratios.
  std::ofstream md(out + "/targets.md");
  auto at = [&](const std::string& k, const std::string& p, double n, int hd = 64) -> const Point* {
    if (const auto* s = find(d, k, p, hd))
      for (const Point& q : *s)
        if (q.n == n) return &q;
    return nullptr;
  };
  md << "| target | measured | met |\n|---|---|---|\n";
  md << fmt::format("| FMA peak (probe, 2 threads) | {:.1f} GFLOP/s wall; {:.1f} GFLOP/s per "
                    "CPU-second (one running core) | — |\n",
                    d.peak_gflops, d.peak_cpu_gflops);
  if (const Point* p = at("cpu_k01_dense_flash", "dense", 4096))
    md << fmt::format("| k01 dense, n 4096, D 64: ≥ 60% of peak | {:.1f} GFLOP/s = {:.0f}% (wall); "
                      "{:.0f}% per CPU-second | {} |\n",
                      p->gflops, 100 * p->frac_peak, 100 * p->cpu_frac_peak,
                      std::max(p->frac_peak, p->cpu_frac_peak) >= 0.6 ? "yes" : "no");
  for (const auto& [k, p] : {std::pair<std::string, std::string>{"cpu_k02_window_band", "window_w256"},
                             {"cpu_k05_bigbird_blocks", "bigbird_b64_r3"}})
    if (const Point* q = at(k, p, 16384))
      md << fmt::format("| {} {}, n 16384: ≥ 45% of peak | {:.1f} GFLOP/s = {:.0f}% (wall); {:.0f}% "
                        "per CPU-second | {} |\n",
                        k, p, q->gflops, 100 * q->frac_peak, 100 * q->cpu_frac_peak,
                        std::max(q->frac_peak, q->cpu_frac_peak) >= 0.45 ? "yes" : "no");
  if (const Point* w = at("cpu_k02_window_band", "window_w256", 16384))
    if (const Point* dn = at("cpu_k01_dense_flash", "dense", 16384)) {
      const double speedup = dn->ms / w->ms, bound = w->dense_flops / w->flops;
      md << fmt::format("| window w256 vs dense, n 16384: speedup ≥ 0.7 × FLOP ratio | {:.2f}× of "
                        "{:.2f}× = {:.2f} of the bound | {} |\n",
                        speedup, bound, speedup / bound, speedup / bound >= 0.7 ? "yes" : "no");
    }
  for (size_t i = 1; i < kShown.size(); ++i)
    if (const auto* s = find(d, kShown[i].first, kShown[i].second)) {
      const double st = loglog_slope(*s, y_ms, 2048), sm = loglog_slope(*s, y_bytes, 2048);
      md << fmt::format("| {} {}: time and memory O(n) up to n {:.0f} | slope time {:.2f}, memory "
                        "{:.2f} (fit on n ≥ 2048) | {} |\n",
                        kShown[i].first, kShown[i].second, s->back().n, st, sm,
                        st < 1.2 && sm < 1.2 ? "yes" : "no");
    }
  // Speedup over the serial references at 4096 (each kernel on its own pattern).
  for (const auto& [k, p] : kShown)
    for (const char* ref : {"a0_dense", "a1_dense_masked", "a2_sparse_rows", "a3_window_band",
                            "a4_bigbird_blocks", "a5_flash_tiled"})
      if (const Point* fast = at(k, p, 4096))
        if (const Point* slow = at(ref, p, 4096))
          md << fmt::format("| {} vs {} on {}, n 4096: ≥ 50× | {:.0f}× | {} |\n", k, ref, p,
                            slow->ms / fast->ms, slow->ms / fast->ms >= 50 ? "yes" : "no");
  std::cout << "wrote " << out << "/targets.md\n";
  return 0;
}
