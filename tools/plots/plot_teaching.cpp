// plot_teaching — the teaching figures of docs/README.md's course, drawn with gnuplot
// through gnuplot-iostream from the pattern module and the reference ladder (nothing here
// re-derives a pattern: every cell is Pattern::allowed of a materialized pattern).
//
//   build/plot_teaching [OUT_DIR]      (default docs/figures; `make figures-teaching`)
//
// Writes (PNG, pngcairo):
//   pattern_masks.png          every pattern kind's mask on 32 tokens, one panel each
//   pattern_<kind>.png         the same masks one per file (for notebooks and slides)
//   bigbird_gather.png         BigBird ITC's block table coloured by why a block is attended
//                              (global, window, random), and the key blocks one query block
//                              gathers into one contiguous buffer (reference/a4_bigbird_blocks.cpp)
//   online_softmax.png         the online softmax (reference/a5_flash_tiled.cpp) on one query
//                              row, tile by tile: scores, running max m, rescale factor and
//                              the running lse estimate m + ln l reaching the oracle's lse
//                              (points at the tile ends, where it exists; no line joins them)
// and prints the numbers behind the last two.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <gnuplot-iostream.h>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "reference/attention.h"
#include "pattern/pattern.h"

using namespace sparseattn;

namespace {

PatternSpec spec(PatternKind kind) {
  PatternSpec s;
  s.kind = kind;
  return s;
}

struct Named {
  std::string file, title;
  PatternSpec spec;
};

// One example of every kind, on n = 32 tokens, with parameters small enough to see.
std::vector<Named> examples(int64_t n) {
  std::vector<Named> v;
  v.push_back({"dense", "dense", spec(PatternKind::dense)});
  PatternSpec causal = spec(PatternKind::dense);
  causal.causal = true;
  v.push_back({"dense_causal", "dense, causal", causal});
  PatternSpec w = spec(PatternKind::window);
  w.window = 3;
  v.push_back({"window", "window w=3 (one-sided)", w});
  PatternSpec wd = w;
  wd.dilation = 2;
  v.push_back({"window_dilated", "window w=3, dilation 2", wd});
  PatternSpec wc = w;
  wc.causal = true;
  v.push_back({"window_causal", "window w=3, causal", wc});
  PatternSpec lf = spec(PatternKind::longformer);
  lf.window = 2;
  lf.global = {0, n / 2};
  v.push_back({"longformer", fmt::format("longformer w=2, global {{0, {}}}", n / 2), lf});
  PatternSpec rnd = spec(PatternKind::random);
  rnd.window = 1;
  rnd.num_random = 2;
  rnd.seed = 0;
  v.push_back({"random", "random: w=1 + 2 random keys", rnd});
  PatternSpec bb = spec(PatternKind::bigbird);
  bb.block_size = 4;
  bb.num_random_blocks = 1;
  bb.seed = 0;
  v.push_back({"bigbird", "bigbird ITC, block 4, 1 random", bb});
  PatternSpec etc = spec(PatternKind::bigbird_etc);
  etc.block_size = 4;
  etc.num_random_blocks = 1;
  etc.num_global_tokens = 2;
  etc.seed = 0;
  v.push_back({"bigbird_etc", "bigbird ETC, block 4, 2 globals", etc});
  PatternSpec h = spec(PatternKind::hierarchical);
  for (int64_t i = 0; i < n; ++i) h.segment_ids.push_back(i < 6 ? 0 : i < 15 ? 1 : i < 24 ? 2 : 3);
  v.push_back({"hierarchical", "hierarchical, 4 segments", h});
  return v;
}

Pattern make(const PatternSpec& s, int64_t n) {
  PatternSizes z;
  z.seq_len_q = z.seq_len_k = n;
  return materialize(s, z);
}

// (x = key j, y = query i, value) triples for `plot with image`; query 0 at the top.
std::vector<std::tuple<int64_t, int64_t, int>> cells(const Pattern& p, int64_t n) {
  std::vector<std::tuple<int64_t, int64_t, int>> c;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) c.emplace_back(j, i, p.allowed(0, 0, i, j) ? 1 : 0);
  return c;
}

const char* kMaskStyle =
    "set palette defined (0 '#f4f4f4', 1 '#2b6cb0')\nunset colorbox\nset cbrange [0:1]\n"
    "set size ratio -1\nset xlabel 'key j'\nset ylabel 'query i'\n"
    "set xtics 8 out nomirror\nset ytics 8 out nomirror\n";

void mask_panel(Gnuplot& gp, const Named& e, const Pattern& p, int64_t n) {
  const PatternStats st = pattern_stats(p);
  gp << "set title \"" << e.title << fmt::format("\\ndensity {:.2f}", st.density)
     << "\" noenhanced\n";
  // Query 0 at the top, as in a matrix (an explicit reversed range: gnuplot's `reverse`
  // keyword is ignored when the limits are given).
  gp << fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", n - 0.5, n - 0.5);
  gp << "plot '-' with image notitle\n";
  gp.send1d(cells(p, n));
}

void masks(const std::string& out, int64_t n) {
  const std::vector<Named> ex = examples(n);
  {
    Gnuplot gp;
    gp << "set terminal pngcairo size 1500,1250 font ',11'\nset output '" << out
       << "/pattern_masks.png'\n"
       << kMaskStyle
       << "set multiplot layout 3,4 title 'Every pattern kind on " << n
       << " tokens (blue = query i may attend key j; contract §3)'\n";
    for (const Named& e : ex) mask_panel(gp, e, make(e.spec, n), n);
    gp << "unset multiplot\nunset output\n";
  }
  for (const Named& e : ex) {
    Gnuplot gp;
    gp << "set terminal pngcairo size 560,560 font ',11'\nset output '" << out << "/pattern_"
       << e.file << ".png'\n"
       << kMaskStyle;
    mask_panel(gp, e, make(e.spec, n), n);
    gp << "unset output\n";
  }
  std::cout << "wrote " << out << "/pattern_masks.png and pattern_<kind>.png for " << ex.size()
            << " patterns\n";
}

// BigBird: why each block is attended (1 global, 2 window, 3 random, 0 not), and the gather.
void bigbird_gather(const std::string& out) {
  const int64_t b = 8, n = 64, nb = n / b, shown = 3;
  PatternSpec s = spec(PatternKind::bigbird);
  s.block_size = b;
  s.num_random_blocks = 2;
  s.seed = 3;
  const Pattern p = make(s, n);
  auto why = [&](int64_t q, int64_t k) {
    if (!p.allowed(0, 0, q * b, k * b)) return 0;
    if (q == 0 || q == nb - 1 || k == 0 || k == nb - 1) return 1;
    if (std::abs(q - k) <= 1) return 2;
    return 3;
  };
  std::vector<std::tuple<int64_t, int64_t, int>> table;
  std::vector<int64_t> gathered;
  std::cout << "\n# bigbird ITC, seq_len " << n << ", block " << b
            << ", 2 random blocks, seed 3: key blocks per query block (g global, w window, r random)\n";
  for (int64_t q = 0; q < nb; ++q) {
    std::string line = fmt::format("query block {}:", q);
    for (int64_t k = 0; k < nb; ++k) {
      table.emplace_back(k, q, why(q, k));
      if (why(q, k)) line += fmt::format(" {}{}", k, "-gwr"[why(q, k)]);
      if (q == shown && why(q, k)) gathered.push_back(k);
    }
    std::cout << line << "\n";
  }
  Gnuplot gp;
  gp << "set terminal pngcairo size 1400,620 font ',12'\nset output '" << out
     << "/bigbird_gather.png'\n"
     << "set palette defined (0 '#f4f4f4', 1 '#d95f02', 2 '#1b9e77', 3 '#7570b3')\n"
     << "set cbrange [0:3]\nunset colorbox\n"
     << "set multiplot title 'BigBird ITC (block " << b << ", " << nb
     << " blocks, 2 random blocks, seed 3): the block table, and what one query block gathers'\n";
  // Left: the block table.
  gp << "set origin 0,0\nset size 0.42,0.95\nset size ratio -1\n"
     << fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", nb - 0.5, nb - 0.5)
     << "set xtics 1 out nomirror\nset ytics 1 out nomirror\nset xlabel 'key block'\n"
     << "set ylabel 'query block'\nset title 'block table'\n"
     << fmt::format("set object 1 rect from -0.5,{} to {},{} fs empty border lc rgb '#000000' lw 3 front\n",
                    shown - 0.5, nb - 0.5, shown + 0.5)
     << "set key outside bottom horizontal\n"
     << "plot '-' with image notitle, "
        "NaN with boxes fs solid lc rgb '#d95f02' title 'global (blocks 0, " << nb - 1 << ")', "
        "NaN with boxes fs solid lc rgb '#1b9e77' title 'window (q-1, q, q+1)', "
        "NaN with boxes fs solid lc rgb '#7570b3' title 'random'\n";
  gp.send1d(table);
  // Right: the gathered buffer of query block `shown`: its key blocks side by side, one
  // box each (x, y, half-width, half-height, kind).
  std::vector<std::tuple<double, double, double, double, int>> strip;
  for (size_t t = 0; t < gathered.size(); ++t)
    strip.emplace_back(static_cast<double>(t), 0.0, 0.45, 0.4, why(shown, gathered[t]));
  gp << "unset object 1\nset origin 0.45,0.2\nset size 0.53,0.55\nset size noratio\n"
     << fmt::format("set xrange [-0.5:{}]\nset yrange [-0.6:0.6]\n", gathered.size() - 0.5)
     << "unset ytics\nset ylabel ''\nset xlabel 'position in the gathered K, V buffer (blocks of "
     << b << " keys)'\n"
     << "set xtics (";
  for (size_t t = 0; t < gathered.size(); ++t) gp << (t ? ", " : "") << fmt::format("'{}' {}", t, t);
  gp << ") out nomirror\nset title \"query block " << shown
     << ": its key blocks, gathered into one buffer,\\nthen one dense block attention (a4)\"\nunset key\n";
  for (size_t t = 0; t < gathered.size(); ++t)
    gp << fmt::format("set label {} \"key\\nblock {}\" at {},0 center front font ',13' tc rgb '#ffffff'\n",
                      10 + t, gathered[t], t);
  gp << "plot '-' using 1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc palette notitle\n";
  gp.send1d(strip);
  gp << "unset multiplot\nunset output\n";
  std::cout << "wrote " << out << "/bigbird_gather.png\n";
}

// The online softmax on one query row: 4 tiles of 6 keys, a5's recurrence written out.
void online_softmax(const std::string& out) {
  const int64_t n = 24, d = 4, tile = 6, row = 5;
  Tensor<double> q({1, 1, n, d}), k({1, 1, n, d}), v({1, 1, n, 1});
  uint64_t x = 12345;
  auto next = [&] {  // a small LCG: fixed inputs, no library PRNG needed for a picture
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  };
  for (auto* t : {&q, &k, &v})
    for (double& e : t->data) e = 1.5 * next();
  for (int64_t i = 0; i < d; ++i) k.data[(15 * d) + i] = 2.5 * q.data[row * d + i];  // a late max
  const Pattern p = make(spec(PatternKind::dense), n);
  const AttentionResult oracle = a1_dense_masked(q, k, v, p, nullptr);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<std::pair<double, double>> scores, m_steps, lse_steps, lse_true;
  double m = -std::numeric_limits<double>::infinity(), l = 0.0;
  std::vector<std::string> rescale_labels;
  std::cout << "\n# online softmax, query row " << row << ", tiles of " << tile
            << " keys: tile, m, rescale exp(m_old - m_new), l, m + ln l\n";
  for (int64_t t0 = 0; t0 < n; t0 += tile) {
    double tile_max = -std::numeric_limits<double>::infinity();
    std::vector<double> s;
    for (int64_t j = t0; j < t0 + tile; ++j) {
      double acc = 0.0;
      for (int64_t e = 0; e < d; ++e) acc += q.data[row * d + e] * k.data[j * d + e];
      s.push_back(scale * acc);
      scores.emplace_back(j, scale * acc);
      tile_max = std::max(tile_max, scale * acc);
    }
    const double m_new = std::max(m, tile_max);
    const double rescale = std::isinf(m) ? 0.0 : std::exp(m - m_new);
    l *= rescale;
    for (double si : s) l += std::exp(si - m_new);
    if (t0 > 0)
      rescale_labels.push_back(fmt::format(
          "set label 'x {:.3g}' at {},{} left front tc rgb '#d95f02'\n", rescale, t0 - 0.3,
          m_new + 0.3));
    m = m_new;
    m_steps.emplace_back(t0 - 0.5, m);
    m_steps.emplace_back(t0 + tile - 0.5, m);
    lse_steps.emplace_back(t0 + tile - 0.5, m + std::log(l));
    std::cout << fmt::format("{} {:.6f} {:.6f} {:.6f} {:.6f}\n", t0 / tile, m, rescale, l,
                             m + std::log(l));
  }
  const double lse = oracle.lse.data[row];
  std::cout << fmt::format("oracle a1_dense_masked lse = {:.6f} (difference {:.2e})\n", lse,
                           std::abs(lse - (m + std::log(l))));
  lse_true = {{-0.5, lse}, {n - 0.5, lse}};
  Gnuplot gp;
  gp << "set terminal pngcairo size 1100,640 font ',12'\nset output '" << out
     << "/online_softmax.png'\n"
     << "set termoption noenhanced\n"
     << "set title \"Online softmax on one query row (a5_flash_tiled): " << n / tile << " tiles of "
     << tile << " keys\\nafter each tile: m_new = max(m, tile max);  l = exp(m - m_new) * l + "
        "sum exp(s - m_new);  the labels give exp(m - m_new)\"\n"
     << "set xlabel 'key j (tiles separated by dotted lines)'\nset ylabel 'scaled score / lse'\n"
     << "set grid ytics\nset key outside below horizontal\n"
     << fmt::format("set xrange [-0.5:{}]\n", n - 0.5);
  for (int64_t t0 = tile; t0 < n; t0 += tile)
    gp << fmt::format("set arrow from {},graph 0 to {},graph 1 nohead dt 3 lc rgb '#888888'\n",
                      t0 - 0.5, t0 - 0.5);
  for (const std::string& label : rescale_labels) gp << label;
  gp << "plot '-' with impulses lw 3 lc rgb '#4a6fa5' title 'score s_j', "
        "'-' with lines lw 3 lc rgb '#d95f02' title 'running max m', "
        "'-' with points pt 7 ps 1.8 lc rgb '#1b9e77' title 'running lse m + ln l (exists only at a tile end: no line between)', "
        "'-' with lines dt 2 lw 2 lc rgb '#000000' title 'lse of the oracle a1'\n";
  gp.send1d(scores);
  gp.send1d(m_steps);
  gp.send1d(lse_steps);
  gp.send1d(lse_true);
  gp << "unset output\n";
  std::cout << "wrote " << out << "/online_softmax.png\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "docs/figures";
  try {
    masks(out, 32);
    bigbird_gather(out);
    online_softmax(out);
  } catch (const std::exception& e) {
    std::cerr << "plot_teaching: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
