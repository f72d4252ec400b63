// plot_reach — the figures of docs/information-flow.md, computed by the graph module
// (never re-derived elsewhere) and drawn with gnuplot through gnuplot-iostream.
//
//   build/plot_reach [OUT_DIR]      (default docs/figures; `make plots-graph`)
//
// Writes reach_connected.{svg,png} (connected fraction vs layer, six patterns on one
// chart), reach_hops.{svg,png} (hop-distance histograms), reach_mixing_depth.{svg,png}
// (mixing depth vs seq_len, log x) and prints the numbers behind each figure as a table.
// SVG for the pages, PNG for notebooks, slides and viewers without SVG.
#include <fmt/format.h>

#include <cmath>
#include <gnuplot-iostream.h>
#include <iomanip>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "graph/measures.h"
#include "graph/reach.h"

namespace sg = sparseattn::graph;
using sparseattn::PatternKind;
using sparseattn::PatternSpec;

namespace {

// The gnuplot lines that open one output file of `ext` ("svg" or "png"), same size and look.
std::string terminal(const std::string& out, const std::string& name, const std::string& ext) {
  const std::string term = ext == "svg" ? "svg size 900,540 font 'sans,12' noenhanced"
                                        : "pngcairo size 900,540 font 'sans,11' noenhanced";
  return "set terminal " + term + "\nset output '" + out + "/" + name + "." + ext + "'\n";
}

PatternSpec window(int64_t w, int64_t d = 1) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = w;
  s.dilation = d;
  return s;
}

struct Named {
  std::string name;
  PatternSpec spec;
};

// The six patterns of the first two figures, at one seq_len.
std::vector<Named> patterns() {
  PatternSpec global = window(8);
  global.kind = PatternKind::longformer;
  global.global = {0};
  PatternSpec random = window(8);
  random.kind = PatternKind::random;
  random.num_random = 3;
  random.seed = 1;
  PatternSpec bigbird;
  bigbird.kind = PatternKind::bigbird;
  bigbird.block_size = 16;
  bigbird.num_random_blocks = 1;
  bigbird.seed = 1;
  PatternSpec mixed;
  mixed.kind = PatternKind::per_head;
  mixed.per_head = {window(8, 4), window(8)};
  return {{"window w=8", window(8)},
          {"window w=8 + global {0}", global},
          {"window w=8 + 3 random keys", random},
          {"bigbird b=16 r=1", bigbird},
          {"dilated w=8 d=4", window(8, 4)},
          {"dilated w=8 d=4 + window w=8 head", mixed}};
}

sg::LayerStack stack_of(const PatternSpec& spec, int64_t n, int64_t layers) {
  sparseattn::PatternSizes z;
  z.num_heads = spec.kind == PatternKind::per_head ? static_cast<int64_t>(spec.per_head.size()) : 1;
  z.seq_len_q = z.seq_len_k = n;
  return sg::uniform_stack(std::make_shared<const sparseattn::Pattern>(sparseattn::materialize(spec, z)),
                           layers);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "docs/figures";
  const int64_t n = 1024, layers = 40;

  // 1 and 2: connected fraction per layer and hop-distance histograms, six patterns.
  std::vector<std::vector<std::pair<int64_t, double>>> fractions, hops;
  std::vector<std::string> names;
  std::cout << fmt::format("# seq_len {}: pattern, mixing depth, diameter, mean shortest path\n", n);
  for (const Named& p : patterns()) {
    const sg::ReachSummary s = sg::g1_reach_bitset(stack_of(p.spec, n, layers), -1);
    const std::vector<double> f = sg::connected_fraction(s);
    std::vector<std::pair<int64_t, double>> fs, hs;
    for (int64_t L = 1; L <= layers; ++L) fs.emplace_back(L, f[std::min<size_t>(L, f.size()) - 1]);
    for (size_t d = 1; d < s.hops.size(); ++d)
      hs.emplace_back(static_cast<int64_t>(d), double(s.hops[d]) / double(n * n));
    fractions.push_back(fs);
    hops.push_back(hs);
    names.push_back(p.name);
    const auto depth = sg::mixing_depth(s);
    const auto mean = sg::mean_shortest_path(s);
    std::cout << fmt::format("{:<36} {:>6} {:>8} {:>8.3f}\n", p.name,
                             depth ? std::to_string(*depth) : "never",
                             depth ? std::to_string(*depth) : "none", mean ? *mean : 0.0);
  }
  for (const char* ext : {"svg", "png"}) {
    Gnuplot gp;
    gp << terminal(out, "reach_connected", ext)
       << "set title 'Connected fraction of (j, i) pairs after L layers (seq_len " << n << ")'\n"
       << "set xlabel 'layers L'\nset ylabel 'fraction of pairs connected'\nset yrange [0:1.02]\n"
       << "set key below maxrows 2 width -2\nset grid\n";
    gp << "plot ";
    for (size_t k = 0; k < names.size(); ++k)
      gp << (k ? ", " : "") << "'-' with linespoints title " << std::quoted(names[k]);
    gp << "\n";
    for (const auto& f : fractions) gp.send1d(f);
  }
  for (const char* ext : {"svg", "png"}) {
    Gnuplot gp;
    gp << terminal(out, "reach_hops", ext)
       << "set title 'Hop-distance distribution (seq_len " << n << ", fraction of all n^2 pairs)'\n"
       << "set xlabel 'hop distance d (log scale)'\nset ylabel 'fraction of pairs at distance d'\n"
       << "set logscale x\nset logscale y\nset format y '%g'\nset key below maxrows 2 width -2\nset grid\n";
    gp << "plot ";
    for (size_t k = 0; k < names.size(); ++k)
      gp << (k ? ", " : "") << "'-' with linespoints title " << std::quoted(names[k]);
    gp << "\n";
    for (const auto& h : hops) gp.send1d(h);
  }

  // 3: mixing depth vs seq_len: linear for a window, flat 2 for a global token,
  // logarithmic for random keys.
  std::vector<std::pair<int64_t, double>> w_depth, g_depth, r_depth, log_ref;
  std::cout << "\n# seq_len, mixing depth: window w=4, window w=4 + global {0}, window w=1 + 2 random keys\n";
  for (int64_t len = 256; len <= 16384; len *= 2) {
    PatternSpec g = window(4);
    g.kind = PatternKind::longformer;
    g.global = {0};
    PatternSpec r = window(1);
    r.kind = PatternKind::random;
    r.num_random = 2;
    r.seed = 1;
    const auto dw = sg::mixing_depth(sg::g1_reach_bitset(stack_of(window(4), len, 1), -1));
    const auto dg = sg::mixing_depth(sg::g1_reach_bitset(stack_of(g, len, 1), -1));
    const auto dr = sg::mixing_depth(sg::g1_reach_bitset(stack_of(r, len, 1), -1));
    w_depth.emplace_back(len, double(*dw));
    g_depth.emplace_back(len, double(*dg));
    r_depth.emplace_back(len, double(*dr));
    log_ref.emplace_back(len, std::log2(double(len)));
    std::cout << fmt::format("{:>6} {:>6} {:>3} {:>4}   (log2 n = {:.0f})\n", len, *dw, *dg, *dr,
                             std::log2(double(len)));
  }
  for (const char* ext : {"svg", "png"}) {
    Gnuplot gp;
    gp << terminal(out, "reach_mixing_depth", ext)
       << "set title 'Mixing depth (layers until every pair is connected) vs seq_len'\n"
       << "set xlabel 'seq_len (log scale)'\nset ylabel 'mixing depth (layers, log scale)'\n"
       << "set logscale x 2\nset logscale y\nset key left top\nset grid\n"
       << "plot '-' with linespoints title 'window w=4: ceil((n-1)/4), linear', "
       << "'-' with linespoints title 'window w=4 + global {0}: 2', "
       << "'-' with linespoints title 'window w=1 + 2 random keys', "
       << "'-' with lines dashtype 2 title 'log2 n'\n";
    gp.send1d(w_depth);
    gp.send1d(g_depth);
    gp.send1d(r_depth);
    gp.send1d(log_ref);
  }
  std::cout << "\nwrote " << out << "/reach_connected, reach_hops, reach_mixing_depth (.svg and .png)\n";
  return 0;
}
