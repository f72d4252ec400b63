// plot_backward — the backward-pass figure of docs/backward.md, drawn from bench_backward's
// JSON with gnuplot-iostream (PNG via pngcairo and SVG), beside plot_bench's forward
// figures in docs/figures/. Derived from the C++ benchmark output only, never recomputed.
//
//   build/plot_backward BENCH_BACKWARD_JSON OUT_DIR
//
// backward_ratio: backward / forward time (process CPU time, the counter bwd_over_fwd_cpu
// of bench_backward) against seq_len, one line per (backward kernel, pattern): solid the
// optimized rungs, the reported FlashAttention-2 ratio (about 2.5, Dao 2023) as a
// horizontal reference.
#include <algorithm>
#include <fstream>
#include <gnuplot-iostream.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

using Line = std::vector<std::pair<double, double>>;  // (seq_len, ratio)

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: plot_backward BENCH_BACKWARD_JSON OUT_DIR\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "plot_backward: cannot read " << argv[1] << "\n";
    return 2;
  }
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, Line> lines;  // "kernel pattern" -> points
  for (const auto& b : j["benchmarks"]) {
    if (b.value("run_type", "") != "iteration" || b.value("error_occurred", false)) continue;
    if (!b.contains("bwd_over_fwd_cpu")) continue;
    const std::string name = b.value("name", "");
    const size_t s1 = name.find('/'), s2 = name.find('/', s1 + 1);
    if (s1 == std::string::npos || s2 == std::string::npos) continue;
    std::string kernel = name.substr(0, s1);
    if (kernel.rfind("cpu_", 0) != 0) continue;  // the optimized rungs only
    kernel = kernel.substr(4, kernel.find('_', 4) - 4);  // "kb01"
    lines[kernel + " " + name.substr(s1 + 1, s2 - s1 - 1)].emplace_back(
        b["seq_len"].get<double>(), b["bwd_over_fwd_cpu"].get<double>());
  }
  if (lines.empty()) {
    std::cerr << "plot_backward: no cpu_* benchmark with bwd_over_fwd_cpu in " << argv[1] << "\n";
    return 1;
  }
  for (auto& [k, v] : lines) std::sort(v.begin(), v.end());
  const std::string out_dir = argv[2], date = j["context"].value("date", "");
  for (const auto& [term, ext] :
       {std::pair<std::string, std::string>{"pngcairo size 960,640 font ',11'", "png"},
        {"svg size 960,640 font 'Helvetica,13' background '#ffffff'", "svg"}}) {
    Gnuplot gp("gnuplot");
    gp << "set terminal " << term << "\n";
    gp << "set output '" << out_dir << "/backward_ratio." << ext << "'\n";
    gp << "set grid\nset key outside right box opaque\nset logscale x 2\n";
    gp << "set title 'Backward / forward time (CPU time, 1 thread, head\\_dim 64; " << date.substr(0, 10)
       << ")'\n";
    gp << "set xlabel 'seq\\_len'\nset ylabel 'backward time / forward time'\nset yrange [0:*]\n";
    gp << "plot 2.5 with lines dt 3 lc rgb '#000000' title 'FlashAttention-2 (reported)'";
    std::map<std::string, int> colour;  // one colour per pattern, kept across kernels
    for (const auto& [k, v] : lines) {
      const std::string pattern = k.substr(k.find(' ') + 1);
      if (!colour.count(pattern)) colour[pattern] = static_cast<int>(colour.size()) + 1;
      const bool kb01 = k.rfind("kb01", 0) == 0;
      std::string title = k;
      for (size_t at = title.find('_'); at != std::string::npos; at = title.find('_', at + 2))
        title.replace(at, 1, "\\_");  // gnuplot's enhanced text reads _ as a subscript
      gp << ", '-' with linespoints lw 2 " << (kb01 ? "dt 2 " : "") << "lc " << colour[pattern]
         << " title '" << title << "'";
    }
    gp << "\n";
    for (const auto& [k, v] : lines) gp.send1d(v);
    gp << "unset output\n";
  }
  std::cout << "wrote " << out_dir << "/backward_ratio.{png,svg}\n";
  return 0;
}
