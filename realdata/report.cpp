// Markdown, JSON and figures of the real-data job (report.h).
#include "realdata/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>
#include <tuple>

#include <fmt/core.h>
#include <gnuplot-iostream.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/npy.h"
#include "pattern/pattern.h"

namespace sparseattn::realdata {

namespace {

constexpr int64_t kHeatmapTokens = 256;

// One colour per pattern, the same in every chart (Okabe–Ito, colour-blind safe).
const char* pattern_colour(size_t p) {
  static const char* colours[] = {"#000000", "#0072b2", "#009e73", "#d55e00",
                                  "#cc79a7", "#e69f00", "#56b4e9", "#f0e442"};
  return colours[p % 8];
}

bool gnuplot_available() { return std::system("gnuplot --version > /dev/null 2>&1") == 0; }

// The head the heat map shows: in the first layer, the one whose mass kept by the first
// sparse pattern (a sliding window by default) is largest — the most local head, where
// a pattern's shape is easiest to see against the attention it approximates.
std::pair<size_t, int64_t> heatmap_head(const JobResult& job, size_t num_patterns) {
  const PatternResult& r = job.results.at(num_patterns > 1 ? 1 : 0);
  const auto it = std::max_element(r.mass_kept.begin(), r.mass_kept.end());
  return {0, static_cast<int64_t>(it - r.mass_kept.begin())};
}

// log10 P_ij for the first T queries and keys of (layer, head): dense softmax over all
// seq_len keys, float64, stabilized by the row maximum.
std::vector<double> dense_log_probs(const RealLayer& layer, int64_t head, double scale,
                                    int64_t T) {
  const int64_t n = layer.q.dim(2), D = layer.q.dim(3);
  const double* q = layer.q.ptr() + head * n * D;
  const double* k = layer.k.ptr() + head * n * D;
  std::vector<double> out(static_cast<size_t>(T * T)), s(static_cast<size_t>(n));
  for (int64_t i = 0; i < T; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t c = 0; c < D; ++c) dot += q[i * D + c] * k[j * D + c];
      s[j] = scale * dot;
      m = std::max(m, s[j]);
    }
    double z = 0.0;
    for (int64_t j = 0; j < n; ++j) z += std::exp(s[j] - m);
    const double lse = m + std::log(z);
    for (int64_t j = 0; j < T; ++j) out[i * T + j] = (s[j] - lse) / std::log(10.0);
  }
  return out;
}

void plot_heatmap(const JobResult& job, const JobOptions& options, const std::string& path) {
  const size_t P = options.patterns.size();
  const auto [layer_index, head] = heatmap_head(job, P);
  const RealLayer& layer = job.data.layers.at(layer_index);
  const int64_t T = std::min(kHeatmapTokens, job.data.seq_len);
  const std::vector<double> logp = dense_log_probs(layer, head, job.data.scale, T);
  PatternSizes sizes;
  sizes.num_heads = job.data.num_heads;
  sizes.seq_len_q = sizes.seq_len_k = job.data.seq_len;

  Gnuplot gp("gnuplot");
  const int cols = 3, rows = static_cast<int>((P + cols - 1) / cols);
  gp << fmt::format("set terminal pngcairo size {},{} font 'sans,10'\n", 480 * cols, 460 * rows);
  gp << "set output '" << path << "'\n";
  gp << fmt::format(
      "set multiplot layout {},{} title 'layer {} head {}: dense attention log10 P (first {} "
      "tokens of {}); washed out = dropped by the pattern'\n",
      rows, cols, layer.layer, head, T, job.data.seq_len);
  gp << "set palette defined (0 '#000004', 1 '#3b0f70', 2 '#8c2981', 3 '#de4968', "
        "4 '#fe9f6d', 5 '#fcfdbf')\n";
  gp << "set cbrange [-6:0]\nset xrange [-0.5:" << T - 0.5 << "]\nset yrange [" << T - 0.5
     << ":-0.5]\nset xlabel 'key j'\nset ylabel 'query i'\nset size square\nunset key\n";
  for (size_t p = 0; p < P; ++p) {
    const Pattern pattern = materialize(options.patterns[p].spec, sizes);
    const HeadLayout& hl = pattern.head(head);
    std::vector<std::tuple<int64_t, int64_t, double>> image;
    std::vector<std::tuple<int64_t, int64_t, int, int, int, int>> shade;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        image.emplace_back(j, i, std::max(-6.0, logp[i * T + j]));
        // Dropped pairs get a translucent white veil: still readable, clearly outside.
        shade.emplace_back(j, i, 255, 255, 255, hl.allowed(i, j) ? 0 : 140);
      }
    const PatternResult& r = job.results.at(layer_index * P + p);
    // The mass kept is the head's mean over all seq_len queries and keys, not over the
    // T x T corner drawn: say so in the title.
    gp << fmt::format("set title '{} (mass kept, this head, all {} tokens: {:.3f})'\n",
                      options.patterns[p].label, job.data.seq_len,
                      r.mass_kept.at(static_cast<size_t>(head)));
    gp << "plot '-' using 1:2:3 with image, '-' using 1:2:3:4:5:6 with rgbalpha\n";
    gp.send1d(image);
    gp.send1d(shade);
  }
  gp << "unset multiplot\nset output\n";
}

void plot_mass_kept(const JobResult& job, const JobOptions& options, const std::string& path) {
  const size_t P = options.patterns.size();
  const int64_t H = job.data.num_heads;
  Gnuplot gp("gnuplot");
  gp << "set terminal pngcairo size 1100,520 font 'sans,10'\n";
  gp << "set output '" << path << "'\n";
  gp << "set title 'Share of the dense softmax mass each pattern keeps, per head (mean over "
     << job.data.seq_len << " queries); dashed: uniform attention'\n";
  gp << "set ylabel 'mass kept'\nset yrange [0:1.02]\nset grid\nset key outside right\n";
  std::string tics;
  for (size_t l = 0; l < job.data.layers.size(); ++l)
    for (int64_t h = 0; h < H; ++h)
      tics += fmt::format("{}\"L{} h{}\" {}", tics.empty() ? "" : ", ",
                          job.data.layers[l].layer, h, static_cast<int64_t>(l) * H + h);
  gp << "set xtics (" << tics << ") rotate by 90 right font ',8'\n";
  gp << "set xrange [-0.5:" << static_cast<int64_t>(job.data.layers.size()) * H - 0.5 << "]\n";
  // Solid: mass kept. Dashed, same colour: what uniform attention would keep (the
  // pattern's density); the gap between the two is the heads' preference for the pattern.
  std::string plot = "plot ";
  for (size_t p = 1; p < P; ++p)
    plot += fmt::format(
        "{}'-' using 1:2 with linespoints lw 2 pt 7 lc rgb '{}' title '{}' noenhanced, "
        "{} dt 2 lw 1 lc rgb '{}' notitle",
        p > 1 ? ", " : "", pattern_colour(p), options.patterns[p].label,
        job.results.at(p).density, pattern_colour(p));
  gp << plot << "\n";
  for (size_t p = 1; p < P; ++p) {
    std::vector<std::pair<int64_t, double>> pts;
    for (size_t l = 0; l < job.data.layers.size(); ++l) {
      const PatternResult& r = job.results.at(l * P + p);
      for (int64_t h = 0; h < H; ++h)
        pts.emplace_back(static_cast<int64_t>(l) * H + h, r.mass_kept.at(static_cast<size_t>(h)));
    }
    gp.send1d(pts);
  }
  gp << "set output\n";
}

// Relative error against dense is exactly 0 for the dense oracle and ~1e-16 for exact
// methods on the dense pattern; the log axis needs a floor.
constexpr double kErrorFloor = 1e-17;

void plot_error_vs_time(const JobResult& job, const JobOptions& options,
                        const std::string& path) {
  const size_t P = options.patterns.size();
  Gnuplot gp("gnuplot");
  gp << "set terminal pngcairo size 1100,700 font 'sans,10'\n";
  gp << "set output '" << path << "'\n";
  gp << fmt::format(
      "set title 'Error vs compute, layer {}: every method on every pattern (all {} heads, {} "
      "tokens)'\n",
      job.data.layers.front().layer, job.data.num_heads, job.data.seq_len);
  gp << "set logscale xy\nset format y '10^{%L}'\nset grid\nset key outside right\n";
  gp << "set xlabel 'wall time per head (ms, this machine, one run)'\n";
  gp << "set ylabel '||o - o_{dense}||_F / ||o_{dense}||_F  (floored at 1e-17)'\n";
  // One series per method (marker and legend entry); every pattern's methods share one
  // error level (the pattern's), so a pattern is a row of markers, labelled at its right.
  std::vector<std::string> names;
  for (size_t p = 0; p < P; ++p)
    for (const MethodResult& m : job.results.at(p).methods)
      if (std::find(names.begin(), names.end(), m.kernel) == names.end()) names.push_back(m.kernel);
  double x_max = 0.0;
  for (size_t p = 0; p < P; ++p)
    for (const MethodResult& m : job.results.at(p).methods)
      x_max = std::max(x_max, 1e3 * m.seconds / static_cast<double>(m.heads_run));
  gp << fmt::format("set xrange [*:{}]\n", x_max * 40.0);  // room for the row labels
  std::string plot = "plot ";
  for (size_t k = 0; k < names.size(); ++k)
    plot += fmt::format("{}'-' using 1:2 with points pt {} ps 1.6 lw 2 title '{}' noenhanced",
                        k ? ", " : "", static_cast<int>(k % 13) + 1, names[k]);
  plot += ", '-' using 1:2:3 with labels left offset char 1.5,0 font ',9' noenhanced notitle";
  gp << plot << "\n";
  auto x_of = [](const MethodResult& m) {
    return 1e3 * m.seconds / static_cast<double>(m.heads_run);
  };
  for (const std::string& name : names) {
    std::vector<std::pair<double, double>> pts;
    for (size_t p = 0; p < P; ++p)
      for (const MethodResult& m : job.results.at(p).methods)
        if (m.kernel == name) pts.emplace_back(x_of(m), std::max(m.rel_vs_dense, kErrorFloor));
    gp.send1d(pts);
  }
  std::vector<std::tuple<double, double, std::string>> labels;
  for (size_t p = 0; p < P; ++p) {
    const PatternResult& r = job.results.at(p);
    double x = 0.0;
    for (const MethodResult& m : r.methods) x = std::max(x, x_of(m));
    labels.emplace_back(x, std::max(r.rel_vs_dense, kErrorFloor), options.patterns[p].label);
  }
  gp.send1d(labels);
  gp << "set output\n";
}

std::string results_json(const JobResult& job) {
  using nlohmann::json;
  json j;
  j["model"] = job.data.model;
  j["package"] = job.data.package;
  j["document"] = job.data.document;
  j["document_sha256"] = job.data.document_sha256;
  j["seq_len"] = job.data.seq_len;
  j["num_heads"] = job.data.num_heads;
  j["head_dim"] = job.data.head_dim;
  j["all_pass"] = job.all_pass;
  j["total_seconds"] = job.total_seconds;
  json rs = json::array();
  for (const PatternResult& r : job.results) {
    json ms = json::array();
    for (const MethodResult& m : r.methods)
      ms.push_back({{"kernel", m.kernel}, {"target", m.target}, {"dtype", m.dtype},
                    {"atol", m.atol}, {"rtol", m.rtol}, {"pass", m.pass},
                    {"failure", m.failure}, {"max_abs_error", m.max_abs_error},
                    {"budget_used", m.budget_used}, {"max_abs_vs_dense", m.max_abs_vs_dense},
                    {"rel_vs_dense", m.rel_vs_dense}, {"heads_run", m.heads_run}, {"seconds", m.seconds},
                    {"speedup_vs_dense", m.speedup_vs_dense},
                    {"fastest_optimized", m.fastest_optimized}});
    rs.push_back({{"layer", r.layer}, {"pattern", r.label}, {"description", r.description},
                  {"nnz", r.nnz}, {"density", r.density}, {"flops", r.flops},
                  {"mass_kept", r.mass_kept}, {"mass_min", r.mass_min},
                  {"mass_median", r.mass_median}, {"mass_max", r.mass_max},
                  {"oracle_seconds", r.oracle_seconds},
                  {"max_abs_vs_dense", r.max_abs_vs_dense}, {"rel_vs_dense", r.rel_vs_dense},
                  {"methods", ms}});
  }
  j["results"] = rs;
  return j.dump(2);
}

std::string markdown(const JobResult& job, const JobOptions& options, bool figures,
                     const std::string& figure_note) {
  const RealDataset& d = job.data;
  const size_t P = options.patterns.size();
  std::ostringstream md;
  md << "# Sparse attention on real data: " << d.model << "\n\n";
  md << fmt::format(
      "Written by `sparseattn demo-real` (realdata/real_job.h defines every number). "
      "Queries, keys and values of {} (package `{}`) on `{}` (sha256 `{}`), {} tokens, "
      "layers {}, {} heads of dimension {}, scale {:.6f}. Total run time {:.1f} s; all "
      "methods within tolerance: **{}**.\n\n",
      d.model, d.package, d.document, d.document_sha256.substr(0, 16), d.seq_len,
      [&] {
        std::string s;
        for (const RealLayer& l : d.layers) s += (s.empty() ? "" : ", ") + std::to_string(l.layer);
        return s;
      }(),
      d.num_heads, d.head_dim, d.scale, job.total_seconds, job.all_pass ? "yes" : "NO");

  md << "## Patterns: mass kept and the error sparsity costs\n\n"
        "mass kept = mean over queries of the dense softmax mass inside the pattern (per "
        "head: min / median / max); vs dense = the pattern's exact output against dense "
        "attention's.\n\n";
  md << "| layer | pattern | density | mass kept min / median / max | max abs vs dense | "
        "rel. Frobenius vs dense |\n|---|---|---|---|---|---|\n";
  for (const PatternResult& r : job.results)
    md << fmt::format("| {} | {} | {:.4f} | {:.3f} / {:.3f} / {:.3f} | {:.3e} | {:.3e} |\n",
                      r.layer, r.label, r.density, r.mass_min, r.mass_median, r.mass_max,
                      r.max_abs_vs_dense, r.rel_vs_dense);

  md << "\n## Methods: error against the oracle, time, speedup\n\n"
        "Every exact registry kernel of target reference or cpu that serves the pattern, on "
        "all heads at once. max abs err = max |o − a1_dense_masked| on the same pattern; "
        "budget = largest |x − ref| / (atol + rtol·|ref|) over o and lse (pass ≤ 1); heads = "
        "heads it ran on (on the dense pattern the O(n²) float64 steps other than the oracle "
        "run on a head subset to keep the job short); speedup = the fastest kernel of the "
        "same target on the dense pattern / this kernel, time per head. ★ = the fastest "
        "optimized kernel on the pattern. Times are one run on a shared machine: "
        "compare ratios within this table only.\n\n";
  for (const PatternResult& r : job.results) {
    md << fmt::format("### layer {}, {} — `{}`\n\n", r.layer, r.label, r.description);
    md << "| method | target | dtype | tolerance (atol, rtol) | heads | max abs err vs oracle | "
          "budget | pass | time (s) | speedup vs dense |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const MethodResult& m : r.methods)
      md << fmt::format("| {}{} | {} | {} | {:g}, {:g} | {} | {:.3e} | {:.3f} | {} | {:.4f} | {:.2f} |\n",
                        m.kernel, m.fastest_optimized ? " ★" : "", m.target, m.dtype, m.atol,
                        m.rtol, m.heads_run, m.max_abs_error, m.budget_used,
                        m.pass ? "yes" : "**NO** " + m.failure, m.seconds, m.speedup_vs_dense);
    md << "\n";
  }
  (void)P;
  md << "## Figures\n\n";
  if (figures) {
    md << "![heat map](real_heatmap.png)\n\n![mass kept per head](real_mass_kept.png)\n\n"
          "![error vs compute](real_error_vs_time.png)\n\n";
  } else {
    md << figure_note << "\n\n";
  }
  md << "## Caveats\n\n"
        "- Positions past the model's 512 trained ones come from the hierarchical extension "
        "(α = 0.4) without fine-tuning: heads keep their shape there, but the model was never "
        "trained on such positions (docs/real-data.md).\n"
        "- Times are single runs on whatever cores were free; only ratios within one run mean "
        "anything.\n"
        "- CUDA kernels are not run by this job; bfloat16 kernels are skipped (they need an "
        "oracle on bf16-rounded inputs).\n";
  return md.str();
}

}  // namespace

std::string write_report(const JobResult& job, const JobOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) throw RuntimeError("cannot create " + options.out_dir + ": " + ec.message());
  bool figures = options.figures;
  std::string note = "Figures not drawn (--no-figures).";
  if (figures && !gnuplot_available()) {
    figures = false;
    note = "Figures not drawn: gnuplot is not installed (scripts/setup.sh installs gnuplot-nox).";
  }
  if (figures) {
    plot_heatmap(job, options, options.out_dir + "/real_heatmap.png");
    plot_mass_kept(job, options, options.out_dir + "/real_mass_kept.png");
    plot_error_vs_time(job, options, options.out_dir + "/real_error_vs_time.png");
  }
  write_text_atomic(options.out_dir + "/results.json", results_json(job) + "\n");
  const std::string path = options.out_dir + "/report.md";
  write_text_atomic(path, markdown(job, options, figures, note));
  return path;
}

}  // namespace sparseattn::realdata
