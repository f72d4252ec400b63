#include "bench/targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace sparseattn::bench {
namespace {

using nlohmann::json;

double num(const json& b, const char* key) {
  const auto it = b.find(key);
  return it != b.end() && it->is_number() ? it->get<double>() : 0.0;
}

double to_ms(double t, const std::string& unit) {
  if (unit == "ns") return t * 1e-6;
  if (unit == "us") return t * 1e-3;
  if (unit == "s") return t * 1e3;
  return t;  // "ms"
}

std::string pct(double f) { return fmt::format("{:.0f}%", 100.0 * f); }

// The kernel each target names, per pattern family (the specialized kernel of the ladder).
struct Family {
  const char* label;
  const char* kernel;
  const char* words;
};
constexpr Family kDense{"dense", "cpu_k01_dense_flash", "dense"};
constexpr Family kWindow{"window_w256", "cpu_k02_window_band", "window w256"};
constexpr Family kLongformer{"longformer_w256_g2", "cpu_k04_longformer", "Longformer w256 g2"};
constexpr Family kBigBird{"bigbird_b64_r3", "cpu_k05_bigbird_blocks", "BigBird b64 r3"};

class Points {
 public:
  explicit Points(std::vector<BenchPoint> p) : points_(std::move(p)) {}
  const BenchPoint* at(const std::string& kernel, const std::string& family, int64_t d,
                       int64_t n) const {
    for (const BenchPoint& p : points_)
      if (p.kernel == kernel && p.family == family && p.head_dim == d && p.seq_len == n) return &p;
    return nullptr;
  }
  std::vector<const BenchPoint*> all(const std::string& kernel, const std::string& family,
                                     int64_t d) const {
    std::vector<const BenchPoint*> v;
    for (const BenchPoint& p : points_)
      if (p.kernel == kernel && p.family == family && p.head_dim == d) v.push_back(&p);
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->seq_len < b->seq_len; });
    return v;
  }
  const std::vector<BenchPoint>& list() const { return points_; }

 private:
  std::vector<BenchPoint> points_;
};

struct Ctx {
  bool quick = false;
  int lanes = 8;            // fma_probe_lanes: 8 (avx2) or 16 (avx512)
  bool has_bf16 = false;    // AVX512-BF16 on this CPU
  std::map<int64_t, EngineCeiling> engine;  // engine_parts, by head_dim (may be empty)
  std::string bf16_engine;  // bench_cpu's context: "dot (...)", "widen (...)", "amx (...)"
};

std::string not_measured(const Ctx& c) {
  return c.quick ? "not measured in the quick grid" : "not measured";
}

// Scores a kernel computes per score the pattern needs, inverted: the share of the tile's
// work that is counted. Window: a 64-row tile walks (64 + 2w) keys for 2w + 1 allowed per
// row (k02). Longformer adds one global chunk of kStep = 2·lanes keys per tile for |G|
// allowed (k04). Dense and BigBird tiles are whole.
double counted_share(const std::string& family, int lanes) {
  if (family == kWindow.label) return 513.0 / (64.0 + 512.0);
  if (family == kLongformer.label) return (513.0 + 2.0) / (64.0 + 512.0 + 2.0 * lanes);
  return 1.0;
}

// The roofline-style note for a point that missed `threshold` (a fraction of peak per
// CPU-second, or NaN when the target is not itself a fraction).
std::string bound_note(const BenchPoint& p, const Ctx& c, double threshold) {
  const int64_t d = p.head_dim;
  const double hi = fma_pipe_bound(d, kSoftmaxOpsFmaMul), lo = fma_pipe_bound(d, kSoftmaxOpsAll);
  const double share = counted_share(p.family, c.lanes);
  std::string s = fmt::format("FMA pipes: ≤ {}–{} of peak at d {} (2d/(2d+c), c = 23 … 11 softmax "
                              "ops per vector of scores)",
                              pct(lo), pct(hi), d);
  if (share < 1.0)
    s += fmt::format(" × {:.2f} counted share of the scores computed = {}–{}", share,
                     pct(lo * share), pct(hi * share));
  const double b_lo = lo * share, b_hi = hi * share;
  // exp: its 20 operations per vector of scores against the whole per-score work.
  s += fmt::format("; exp: {} ops per {} scores, {} of the vector work", kExpOps, c.lanes,
                   pct(static_cast<double>(kExpOps) / (2.0 * d + kSoftmaxOpsAll)));
  // Memory: the micro-kernels read K and V in place from the panels (optimized/cpu/panel.h;
  // a chunk that starts off a panel block copies its K, which no target point's chunks
  // do), so what moves is the packing: K transposed once per head (n·d floats read and
  // written), V read from the inputs.
  const double keys_per_row =
      p.flops > 0 && p.seq_len > 0 ? p.flops / (4.0 * d * static_cast<double>(p.seq_len)) : 0.0;
  const double pack_b = keys_per_row > 0 ? 2.0 / keys_per_row : 0.0;  // 8nd B / (4·nnz·d)
  s += fmt::format("; memory: {:.4f} B/FLOP panel packing (K transposed once per head; V and "
                   "the chunks read in place) = {:.2f} GB/s at the measured {:.0f} GFLOP/s",
                   pack_b, pack_b * p.cpu_gflops, p.cpu_gflops);
  if (p.family == kBigBird.label)
    s += " (the random key blocks are scattered over the panel: their first reads miss the cache)";
  // k04's band mask, read from optimized/cpu/k04_longformer.cpp, not measured here.
  if (p.family == kLongformer.label)
    s += "; mask: k04 masks a band row by two fills per edge chunk (dilation 1; a dilated band "
         "tests every score), and a separate masked chunk of global keys per tile";
  // What the engine's own loops reach here, measured (engine_parts): the ceiling the
  // instruction count above cannot see (which pipes this core gives each instruction).
  const auto ceiling = c.engine.find(d);
  double measured_ceiling = -1.0;
  if (ceiling != c.engine.end()) {
    measured_ceiling = ceiling->second.step * share;
    s += fmt::format("; measured here (`engine_parts/D{}`: one thread, hot in cache): QKᵀ "
                     "micro-kernel {}, P·V {}, a tile step with its softmax {} of peak",
                     d, pct(ceiling->second.qk), pct(ceiling->second.pv), pct(ceiling->second.step));
    if (share < 1.0) s += fmt::format(" × {:.2f} = {}", share, pct(measured_ceiling));
  }
  // The verdict: which bound the target meets.
  if (!std::isnan(threshold) && measured_ceiling >= 0.0 && threshold > measured_ceiling) {
    s += fmt::format(". The target ({}) is above what the engine's tile step reaches on hot data "
                     "on this machine ({}): the gap is the engine's instruction mix on this core, "
                     "not memory or threads; the kernel's own gap to that ceiling ({} measured) is "
                     "packing, masks, cache misses and scheduling",
                     pct(threshold), pct(measured_ceiling), pct(p.cpu_frac_peak));
  } else if (!std::isnan(threshold)) {
    if (threshold > b_hi)
      s += fmt::format(". The target ({}) is above the FMA-pipe bound: unreachable without "
                       "fewer softmax operations per score",
                       pct(threshold));
    else if (threshold > b_lo)
      s += fmt::format(". The target ({}) needs the softmax's adds, compares and integer "
                       "operations off the FMA pipes",
                       pct(threshold));
    else
      s += fmt::format(". The target ({}) is under the FMA-pipe bound: the gap ({} measured) is "
                       "latency, exp, copies or scheduling, not the FMA pipes",
                       pct(threshold), pct(p.cpu_frac_peak));
  }
  return s;
}

std::string point_words(const BenchPoint& p) {
  if (!p.error.empty()) return fmt::format("n {}: error ({})", p.seq_len, p.error);
  return fmt::format("n {}: {} per CPU-second ({} wall; {:.1f} GFLOP/s per CPU-second)", p.seq_len,
                     pct(p.cpu_frac_peak), pct(p.frac_peak), p.cpu_gflops);
}

json point_json(const BenchPoint& p) {
  json j{{"kernel", p.kernel},        {"family", p.family},
         {"head_dim", p.head_dim},    {"seq_len", p.seq_len}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  j["cpu_frac_peak"] = p.cpu_frac_peak;
  j["frac_peak"] = p.frac_peak;
  j["cpu_gflops"] = p.cpu_gflops;
  j["gflops"] = p.gflops;
  j["real_ms"] = p.real_ms;
  j["peak_cpu_gflops"] = p.peak_cpu_gflops;
  return j;
}

// A fraction-of-peak target over the points of one (kernel, family, head_dim): every n in
// `ns` (or every measured n >= min_n when ns is empty) must reach `threshold`.
TargetRow frac_target(const Points& pts, const Ctx& c, const std::string& id, const Family& f,
                      int64_t d, int64_t min_n, std::optional<int64_t> exact_n, double threshold) {
  TargetRow row;
  row.id = id;
  row.what = exact_n ? fmt::format("{} float32 (`{}`), head_dim {}, n {}", f.words, f.kernel, d,
                                   *exact_n)
                     : fmt::format("{} float32 (`{}`), head_dim {}, n ≥ {}", f.words, f.kernel, d,
                                   min_n);
  row.threshold = fmt::format("≥ {} of peak per CPU-second", pct(threshold));
  row.values = json::array();
  std::vector<const BenchPoint*> chosen;
  for (const BenchPoint* p : pts.all(f.kernel, f.label, d))
    if (exact_n ? p->seq_len == *exact_n : p->seq_len >= min_n) chosen.push_back(p);
  if (chosen.empty()) {
    row.status = "not measured";
    row.measured = not_measured(c);
    return row;
  }
  const BenchPoint* worst = nullptr;
  bool errored = false;
  for (const BenchPoint* p : chosen) {
    row.values.push_back(point_json(*p));
    row.measured += (row.measured.empty() ? "" : "; ") + point_words(*p);
    if (!p->error.empty()) errored = true;
    else if (!worst || p->cpu_frac_peak < worst->cpu_frac_peak) worst = p;
  }
  if (errored || !worst) {
    row.status = "not measured";
    return row;
  }
  const bool met = worst->cpu_frac_peak >= threshold;
  row.status = met ? "met" : "not met";
  if (!met) row.bound = bound_note(*worst, c, threshold);
  return row;
}

// Speedup over dense against the FLOP ratio, at n 16384 or the largest n where both the
// pattern's kernel and dense k01 were measured (said so in `what`).
TargetRow speedup_target(const Points& pts, const Ctx& c, const std::string& id, const Family& f,
                         int64_t d, int64_t want_n, double threshold) {
  TargetRow row;
  row.id = id;
  row.threshold = fmt::format("≥ {:.1f} × the FLOP ratio dense_flops / flops (per CPU-second)",
                              threshold);
  row.values = json::array();
  const BenchPoint *pat = nullptr, *den = nullptr;
  for (const BenchPoint* p : pts.all(f.kernel, f.label, d)) {
    const BenchPoint* q = pts.at(kDense.kernel, kDense.label, d, p->seq_len);
    if (!q || !p->error.empty() || !q->error.empty() || p->seq_len > want_n) continue;
    pat = p;  // ascending: the last one kept is the largest n <= want_n
    den = q;
  }
  if (!pat) {
    row.what = fmt::format("{} (`{}`) vs dense (`{}`), head_dim {}, n {}", f.words, f.kernel,
                           kDense.kernel, d, want_n);
    row.status = "not measured";
    row.measured = not_measured(c);
    return row;
  }
  row.what = fmt::format("{} (`{}`) vs dense (`{}`), head_dim {}, n {}{}", f.words, f.kernel,
                         kDense.kernel, d, pat->seq_len,
                         pat->seq_len == want_n
                             ? ""
                             : fmt::format(" (n {} not measured for both; largest n where both are)",
                                           want_n));
  const double flop_ratio = pat->dense_flops / pat->flops;
  // Per CPU-second: (dense_flops / dense cpu rate) / (flops / pattern cpu rate) / flop_ratio.
  const double of_bound_cpu = pat->cpu_gflops / den->cpu_gflops;
  const double speedup_wall = den->real_ms / pat->real_ms;
  const double of_bound_wall = speedup_wall / flop_ratio;
  row.values.push_back(json{{"seq_len", pat->seq_len},
                            {"flop_ratio", flop_ratio},
                            {"speedup_cpu", of_bound_cpu * flop_ratio},
                            {"of_flop_ratio_cpu", of_bound_cpu},
                            {"speedup_wall", speedup_wall},
                            {"of_flop_ratio_wall", of_bound_wall}});
  row.measured = fmt::format("{:.1f}× of a {:.1f}× FLOP ratio = {:.2f} of it per CPU-second "
                             "(wall: {:.1f}× = {:.2f})",
                             of_bound_cpu * flop_ratio, flop_ratio, of_bound_cpu, speedup_wall,
                             of_bound_wall);
  const bool met = of_bound_cpu >= threshold;
  row.status = met ? "met" : "not met";
  if (!met) {
    row.bound = fmt::format(
        "the ratio is the pattern kernel's efficiency over dense's ({} against {} of peak per "
        "CPU-second); the pattern's own bound: {}",
        pct(pat->cpu_frac_peak), pct(den->cpu_frac_peak),
        bound_note(*pat, c, std::numeric_limits<double>::quiet_NaN()));
  }
  return row;
}

// bf16 entries ("<float32 name>_bf16") against their float32 kernel: one row per
// (entry, family, head_dim), at the largest n both were measured.
// The engine's measured ceiling per head_dim, reported beside the targets it bounds.
std::vector<TargetRow> engine_rows(const Ctx& c) {
  std::vector<TargetRow> rows;
  for (const auto& [d, e] : c.engine) {
    TargetRow row;
    row.id = fmt::format("engine_ceiling_d{}", d);
    row.what = fmt::format("the float32 engine alone (`engine_parts/D{}`: flash_tile.h's "
                           "micro-kernels and a tile step, one thread, hot in cache), head_dim {}",
                           d, d);
    row.threshold = "—";
    row.measured = fmt::format("QKᵀ {}, P·V {}, tile step with the softmax {} of peak per "
                               "CPU-second",
                               pct(e.qk), pct(e.pv), pct(e.step));
    row.status = "reported";
    row.values = json{{"head_dim", d}, {"qk_frac_peak", e.qk}, {"pv_frac_peak", e.pv},
                      {"step_frac_peak", e.step}};
    rows.push_back(std::move(row));
  }
  return rows;
}

// What bounds a bf16 entry against its float32 kernel, by the engine the run used (bench_cpu's
// `bf16_engine` context; flash_tile_bf16.h, dispatch_bf16.cpp). Per vector of scores the
// float32 kernel spends 2d FMA slots on the products and c = 23 … 11 on the softmax.
std::string bf16_bound(int64_t d, const std::string& engine) {
  const std::string used = engine.empty() ? "" : fmt::format("the engine that ran: {}. ", engine);
  const auto ratio = [d](double product_slots, int c) {
    return (2.0 * d + c) / (product_slots + c + 1.0);  // +1: P converted to bf16
  };
  if (engine.rfind("widen", 0) == 0)
    return used + "The widening engine runs the float32 FMAs on bf16 panels widened to float32 "
                  "(chosen where vdpbf16ps is below 0.75× the FMA FLOP rate): the products cost "
                  "what float32's do, so its bound is ≈ 1.0× plus what the halved bytes of the "
                  "panels save; 1.6× needs a faster bf16 product than this core's vdpbf16ps";
  if (engine.rfind("amx", 0) == 0)
    return used + fmt::format("AMX tiles run the products (TDPBF16PS, many times the FMA rate): "
                              "the float32 softmax and the tile loads/stores are what is left, "
                              "≤ {:.1f}–{:.1f}× at d {} ((2d+c)/(c+1), c = 23 … 11) for the "
                              "tiles alone; the entry's passes over the inputs that do not shrink "
                              "with the products — the float32 guard, rounding q, k, v to bf16, "
                              "packing the panels — take the rest (a profile of each: "
                              "docs/benchmarks.md)",
                              ratio(0.0, kSoftmaxOpsAll), ratio(0.0, kSoftmaxOpsFmaMul), d);
  // vdpbf16ps: two bf16 products per float32 lane, so QKᵀ and PV cost d instead of 2d FMA
  // slots per vector of scores, when it issues at the FMA's rate; the softmax stays float32.
  return used + fmt::format("FMA pipes: vdpbf16ps halves the 2d FMA slots per score, the softmax "
                            "stays float32: ≤ {:.2f}–{:.2f}× at d {} ((2d+c)/(d+c+1), c = 23 … "
                            "11); memory: bf16 halves the bytes of the chunk copies and panels",
                            ratio(static_cast<double>(d), kSoftmaxOpsAll),
                            ratio(static_cast<double>(d), kSoftmaxOpsFmaMul), d);
}

std::vector<TargetRow> bf16_targets(const Points& pts, const Ctx& c, double threshold) {
  std::vector<TargetRow> rows;
  std::map<std::tuple<std::string, std::string, int64_t>, bool> seen;
  const std::string suffix = "_bf16";
  for (const BenchPoint& p : pts.list()) {
    if (p.kernel.size() <= suffix.size() ||
        p.kernel.compare(p.kernel.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    if (seen[{p.kernel, p.family, p.head_dim}]) continue;
    seen[{p.kernel, p.family, p.head_dim}] = true;
    const std::string f32 = p.kernel.substr(0, p.kernel.size() - suffix.size());
    TargetRow row;
    row.id = fmt::format("bf16/{}/{}/D{}", p.kernel, p.family, p.head_dim);
    row.threshold = fmt::format("≥ {:.1f}× the float32 kernel's throughput (where AVX512-BF16 "
                                "exists)",
                                threshold);
    row.values = json::array();
    const BenchPoint *b = nullptr, *f = nullptr;
    for (const BenchPoint* q : pts.all(p.kernel, p.family, p.head_dim)) {
      const BenchPoint* r = pts.at(f32, p.family, p.head_dim, q->seq_len);
      if (r && q->error.empty() && r->error.empty()) b = q, f = r;
    }
    if (!b) {
      row.what = fmt::format("`{}` vs `{}` on {}, head_dim {}", p.kernel, f32, p.family, p.head_dim);
      row.status = "not measured";
      row.measured = pts.all(f32, p.family, p.head_dim).empty()
                         ? fmt::format("no float32 `{}` point to pair with", f32)
                         : "no validated point of both";
      for (const BenchPoint* q : pts.all(p.kernel, p.family, p.head_dim))
        if (!q->error.empty()) row.measured += "; " + point_words(*q);
      rows.push_back(row);
      continue;
    }
    row.what = fmt::format("`{}` vs `{}` on {}, head_dim {}, n {}", p.kernel, f32, p.family,
                           p.head_dim, b->seq_len);
    const double ratio_cpu = b->cpu_gflops / f->cpu_gflops, ratio_wall = f->real_ms / b->real_ms;
    row.values.push_back(json{{"seq_len", b->seq_len}, {"ratio_cpu", ratio_cpu},
                              {"ratio_wall", ratio_wall}});
    row.measured = fmt::format("{:.2f}× per CPU-second ({:.2f}× wall)", ratio_cpu, ratio_wall);
    if (!c.has_bf16) {
      row.status = "not applicable";
      row.bound = "this CPU has no AVX512-BF16 (the widening path is not held to 1.6×)";
    } else if (ratio_cpu >= threshold) {
      row.status = "met";
    } else {
      row.status = "not met";
      row.bound = bf16_bound(b->head_dim, c.bf16_engine);
    }
    rows.push_back(row);
  }
  if (rows.empty()) {
    TargetRow row;
    row.id = "bf16";
    row.what = "bf16 inputs, float32 accumulation (`<float32 name>_bf16` entries)";
    row.threshold = fmt::format("≥ {:.1f}× the float32 kernel's throughput (where AVX512-BF16 "
                                "exists)",
                                threshold);
    row.measured = "not built (no `_bf16` entry in the benchmark)";
    row.status = "not built";
    row.values = json::array();
    rows.push_back(row);
  }
  return rows;
}

// The PyTorch comparison is `make peers-bench`'s: its files are read if present.
// peers.json ({"meta": {"shape": ...}, "cases": [{"peer", "impl", "ratio_median",
// "ratio_min", "ratio_max", ...}]}, as `make peers-bench` writes it): one row per case. The
// dense SDPA case and every FlexAttention case are held to 2× (sparseattn twice as fast: the
// dense kernel has been there, and FlexAttention on the CPU is the strongest peer for a
// sparse pattern); the other cases (HF, SDPA with a mask, enable_gqa, decode) are reported.
// A file with a top-level "targets" array of {what, threshold, measured, met} objects gives
// those rows; any other JSON file is pointed at.
// The dense SDPA case's bound when 2× is missed: SDPA's own fraction of the FMA peak (its
// FLOPs, 4·batch·heads·n²·d, over its median wall time on the file's threads, against the
// probe per CPU-second) — 2× SDPA needs twice that from sparseattn, set against the engine's
// measured ceiling at that head_dim when bench_cpu measured it.
std::string sdpa_bound(const json& meta, double peer_s, double peak_cpu, const Ctx& c) {
  const json shape = meta.value("shape", json::object());
  const double threads = meta.value("threads", 0.0);
  if (!shape.is_object() || peer_s <= 0 || peak_cpu <= 0 || threads <= 0) return "";
  const double b = shape.value("batch", 1.0), h = shape.value("num_heads", 0.0),
               n = shape.value("seq_len", 0.0), d = shape.value("head_dim", 0.0);
  const double flops = 4.0 * b * h * n * n * d;
  if (flops <= 0) return "";
  const double frac = flops / peer_s / threads / 1e9 / peak_cpu;
  std::string s = fmt::format(
      "SDPA itself runs at {} of the FMA peak here ({:.1f} GFLOP in {:.3f} s on {:.0f} threads, "
      "against the start-up probe's {:.1f} GFLOP/s per CPU-second): 2× SDPA needs {} of peak",
      pct(frac), flops / 1e9, peer_s, threads, peak_cpu, pct(2.0 * frac));
  const auto e = c.engine.find(static_cast<int64_t>(d));
  if (e != c.engine.end())
    s += fmt::format(", against the engine's measured tile step of {} (`engine_parts/D{:.0f}`)",
                     pct(e->second.step), d);
  return s;
}

std::vector<TargetRow> peer_targets(const std::vector<PeerFile>& peers, const Ctx& c,
                                    double peak_cpu) {
  std::vector<TargetRow> rows;
  const std::string what = "dense float32 head_dim 64 and 128 vs PyTorch CPU SDPA";
  const double kPeerRatio = 2.0;
  const std::string threshold = "≥ 2× (median of interleaved rounds)";
  for (const PeerFile& f : peers) {
    if (f.json.is_object() && f.json.contains("cases") && f.json["cases"].is_array()) {
      const json shape = f.json.value("meta", json::object()).value("shape", json::object());
      const std::string at =
          shape.is_object() && shape.contains("seq_len") && shape.contains("head_dim")
              ? fmt::format(", n {}, head_dim {}, {} heads", shape["seq_len"].dump(),
                            shape["head_dim"].dump(), shape.value("num_heads", json()).dump())
              : "";
      for (const json& cs : f.json["cases"]) {
        if (!cs.is_object() || !cs.contains("ratio_median") || !cs["ratio_median"].is_number())
          continue;
        const std::string peer = cs.value("peer", std::string("?"));
        const std::string impl = cs.value("impl", std::string("?"));
        const double med = cs["ratio_median"].get<double>();
        TargetRow row;
        row.id = "peers/" + cs.value("case", peer);
        row.what = fmt::format("`{}` vs {}{} (`{}`)", impl, peer, at, f.path);
        row.measured = fmt::format("{:.2f}× (rounds {:.2f}–{:.2f}; > 1: sparseattn faster)", med,
                                   cs.value("ratio_min", 0.0), cs.value("ratio_max", 0.0));
        row.values = json{{"ratio_median", med},
                          {"ratio_min", cs.value("ratio_min", 0.0)},
                          {"ratio_max", cs.value("ratio_max", 0.0)}};
        const bool dense_sdpa = peer == "torch SDPA" && impl == kDense.kernel;
        const bool flex = peer.rfind("FlexAttention", 0) == 0;
        if (dense_sdpa || flex) {
          row.threshold = threshold;
          row.status = med >= kPeerRatio ? "met" : "not met";
          if (med < kPeerRatio) {
            row.bound = fmt::format(
                "the kernel's own bound: see `{}`'s rows above (its fraction of peak per "
                "CPU-second on this pattern)", impl);
            const std::string sdpa =
                dense_sdpa ? sdpa_bound(f.json.value("meta", json::object()),
                                        cs.value("peer_median_s", 0.0), peak_cpu, c)
                           : "";
            if (!sdpa.empty()) row.bound = sdpa + "; " + row.bound;
          }
        } else {
          row.threshold = "— (no threshold: reported)";
          row.status = "reported";
        }
        rows.push_back(row);
      }
      continue;
    }
    if (f.json.is_object() && f.json.contains("targets") && f.json["targets"].is_array()) {
      for (const json& t : f.json["targets"]) {
        if (!t.is_object()) continue;
        TargetRow row;
        row.id = "peers/" + t.value("what", std::string("?"));
        row.what = t.value("what", what) + " (`" + f.path + "`)";
        row.threshold = t.value("threshold", threshold);
        row.measured = t.contains("measured") && t["measured"].is_string()
                           ? t["measured"].get<std::string>()
                           : (t.contains("measured") ? t["measured"].dump() : "");
        const json met = t.value("met", json());
        row.status = met.is_boolean() ? (met.get<bool>() ? "met" : "not met") : "see file";
        row.values = t;
        rows.push_back(row);
      }
      continue;
    }
    TargetRow row;
    row.id = "peers/" + f.path;
    row.what = what;
    row.threshold = threshold;
    row.measured = f.json.is_null() ? fmt::format("`{}` did not parse", f.path)
                                    : fmt::format("see `{}`", f.path);
    row.status = "see file";
    row.values = json::array();
    rows.push_back(row);
  }
  if (rows.empty()) {
    TargetRow row;
    row.id = "peers";
    row.what = what;
    row.threshold = threshold;
    row.measured = "run make peers-bench";
    row.status = "not measured";
    row.values = json::array();
    rows.push_back(row);
  }
  return rows;
}

// The other programs' files (ExtraFiles). `file_problem` says why a file gives no figures:
// absent (the command that writes it), not JSON, or not that program's JSON; "" when usable.
std::string default_path(const InputFile& f, const char* name) {
  return f.path.empty() ? fmt::format("build/bench/{}.json", name) : f.path;
}

TargetRow file_row(const std::string& id, const std::string& what, const std::string& threshold,
                   const std::string& status, const std::string& measured) {
  TargetRow row;
  row.id = id;
  row.what = what;
  row.threshold = threshold;
  row.status = status;
  row.measured = measured;
  row.values = json::array();
  return row;
}

// nullopt when `f` is usable (an object with every key of `keys`), else the row's words.
std::optional<std::pair<std::string, std::string>> file_problem(
    const InputFile& f, const char* program, const std::string& command,
    std::initializer_list<const char*> keys) {
  const std::string path = default_path(f, program);
  if (!f.present)
    return std::make_pair(std::string("not measured"),
                          fmt::format("no `{}`: run `make bench`, or `{}`", path, command));
  if (f.json.is_null() || f.json.is_discarded())
    return std::make_pair(std::string("see file"), fmt::format("`{}` did not parse", path));
  for (const char* key : keys)
    if (!f.json.is_object() || !f.json.contains(key))
      return std::make_pair(std::string("see file"),
                            fmt::format("`{}` is not {}'s JSON (no \"{}\")", path, program, key));
  return std::nullopt;
}

// GQA: bench_modern's "<pattern> <kernel> gqa g=8" variants against their MHA baselines
// (same q, same FLOPs, H_kv 1 against 8), one row per kernel, the median ratio of the rounds.
std::vector<TargetRow> gqa_targets(const InputFile& f) {
  const std::string path = default_path(f, "bench_modern");
  const std::string command = fmt::format("build/bench_modern --heads 8 --json {}", path);
  const std::string threshold = "≤ 1.0× the time of plain multi-head attention (median ratio of "
                                "interleaved rounds)";
  struct Case {
    const char* id;
    const char* variant;  // bench_modern's name, without " g=<heads>"
    const char* words;
  };
  const Case cases[] = {
      {"gqa_dense_k01", "dense k01 gqa", "dense (`cpu_k01_dense_flash`)"},
      {"gqa_window_k02", "window k02 gqa", "window (`cpu_k02_window_band`)"},
      {"gqa_window_k06", "window k06 gqa", "window through the layout (`cpu_k06_generic_tiles`)"},
  };
  std::vector<TargetRow> rows;
  const auto problem = file_problem(f, "bench_modern", command, {"variants", "heads"});
  const json& j = f.json;
  for (const Case& cs : cases) {
    std::string what = fmt::format("grouped-query attention g = 8 (H_q 8, H_kv 1) vs multi-head "
                                   "(H_kv 8) on the same q, {}", cs.words);
    if (problem) {
      rows.push_back(file_row(cs.id, what, threshold, problem->first, problem->second));
      continue;
    }
    what += fmt::format(", n {}, head_dim {}{} (`{}`)", j.value("n", json()).dump(),
                        j.value("head_dim", json()).dump(),
                        std::string(cs.variant).rfind("window", 0) == 0
                            ? ", window " + j.value("window", json()).dump()
                            : "",
                        path);
    const int64_t heads = j["heads"].is_number_integer() ? j["heads"].get<int64_t>() : 0;
    if (heads != 8) {
      rows.push_back(file_row(cs.id, what, threshold, "not measured",
                              fmt::format("`{}` ran with H_q {} (g = {}), not g = 8: run `{}`",
                                          path, j["heads"].dump(), j["heads"].dump(), command)));
      continue;
    }
    const json* v = nullptr;
    const json* base = nullptr;
    if (j["variants"].is_array())
      for (const json& x : j["variants"])
        if (x.is_object() && x.value("name", std::string()) == std::string(cs.variant) + " g=8")
          v = &x;
    if (v)
      for (const json& x : j["variants"])
        if (x.is_object() && x.value("name", std::string()) == v->value("vs", std::string()))
          base = &x;
    if (!v || !v->contains("ratio") || !(*v)["ratio"].is_number()) {
      rows.push_back(file_row(cs.id, what, threshold, "see file",
                              fmt::format("`{}` has no \"{} g=8\" ratio", path, cs.variant)));
      continue;
    }
    TargetRow row = file_row(cs.id, what, threshold, "", "");
    const double ratio = (*v)["ratio"].get<double>();
    const double lo = v->value("ratio_min", 0.0), hi = v->value("ratio_max", 0.0);
    row.measured = fmt::format("{:.3f}× (rounds {:.3f}–{:.3f}; GQA {:.1f} ms, MHA {} ms, median "
                               "of {} rounds)",
                               ratio, lo, hi, v->value("median_ms", 0.0),
                               base ? fmt::format("{:.1f}", base->value("median_ms", 0.0)) : "?",
                               j.value("rounds", json()).dump());
    row.values = json{{"ratio", ratio}, {"ratio_min", lo}, {"ratio_max", hi},
                      {"median_ms", v->value("median_ms", 0.0)},
                      {"mha_median_ms", base ? base->value("median_ms", 0.0) : 0.0}};
    row.status = ratio <= 1.0 ? "met" : "not met";
    if (ratio > 1.0)
      row.bound = fmt::format(
          "the packed panels: GQA does MHA's FLOPs with one K/V panel packed per kv head "
          "(optimized/cpu/panel.h) — 1 instead of 8 — read by the 8 query heads of its group, so "
          "its bound is below 1.0×; above it ({:.3f}×) the packing saved less than the rounds' "
          "spread ({:.3f}–{:.3f}) or the shared panel left the cache between the heads that read it",
          ratio, lo, hi);
    rows.push_back(row);
  }
  return rows;
}

// Decode: bench_decode's bytes per second against its copy probe; the worse layout decides.
TargetRow decode_target(const InputFile& f) {
  const std::string path = default_path(f, "bench_decode");
  const std::string command = fmt::format("build/bench_decode --json {}", path);
  const std::string threshold = "≥ 60% of the probed copy bandwidth (read + written per second)";
  std::string what = "decode `cpu_k09_decode_bf16`: one query against a bf16 KV cache, "
                     "contiguous and paged";
  if (auto p = file_problem(f, "bench_decode", command,
                            {"contiguous", "paged", "copy_gbps", "bytes_per_call"}))
    return file_row("decode_k09_bf16", what, threshold, p->first, p->second);
  const json& j = f.json;
  auto get = [](const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
  };
  const json &c = j["contiguous"], &pg = j["paged"];
  const json ratio = j.value("paged_over_contiguous", json::object());
  const double hq = get(j, "num_heads"), hkv = get(j, "num_kv_heads"), d = get(j, "head_dim");
  const double threads = std::max(1.0, get(j, "threads"));
  what += fmt::format(", L_cache {}, H_q {}, H_kv {}, head_dim {}, page_size {}, {} thread{} (`{}`)",
                      get(j, "l_cache"), hq, hkv, d, get(j, "page_size"), threads,
                      threads == 1 ? "" : "s", path);
  TargetRow row = file_row("decode_k09_bf16", what, threshold, "", "");
  const double bytes = get(j, "bytes_per_call"), copy = get(j, "copy_gbps");
  const double fc = get(c, "frac_copy"), fp = get(pg, "frac_copy");
  row.measured = fmt::format(
      "contiguous {:.2f} GB/s = {}, paged {:.2f} GB/s = {} of the copy probe's {:.2f} GB/s "
      "({:.1f} MB per call; CPU {:.2f} ms per call contiguous); paged/contiguous {:.2f} (rounds "
      "{:.2f}–{:.2f})",
      get(c, "gbps"), pct(fc), get(pg, "gbps"), pct(fp), copy, bytes * 1e-6, get(c, "cpu_ms"),
      get(ratio, "median"), get(ratio, "min"), get(ratio, "max"));
  row.values = j;
  const double worst = std::min(fc, fp);
  row.status = worst >= 0.6 ? "met" : "not met";
  if (worst < 0.6) {
    // CPU time is summed over the threads: bytes per CPU-second times the threads is the rate
    // had every thread kept its core.
    const double cpu_s = get(c, "cpu_ms") * 1e-3;
    const double per_cpu = cpu_s > 0 ? bytes / cpu_s * 1e-9 : 0.0;
    const double g = hkv > 0 ? hq / hkv : 0.0;
    row.bound = fmt::format(
        "per CPU-second {:.2f} GB/s, × {} thread{} = {:.2f} GB/s = {} of the probe had every thread "
        "its core{}; the arithmetic per key against the read: g = {} dot products of head_dim {} "
        "and g accumulations of it, 4·d·g = {} FLOPs per 4·d = {} bytes of bf16 K and V ({} FLOP "
        "per byte), and the online softmax per 64-key block, overlapping the read only in part",
        per_cpu, threads, threads == 1 ? "" : "s", per_cpu * threads, pct(copy > 0 ? per_cpu * threads / copy : 0.0),
        copy > 0 && per_cpu * threads / copy >= 0.6
            ? " (the wall clock lost time to other jobs: per CPU-second the target is reached)"
            : "",
        g, d, 4.0 * d * g, 4.0 * d, g);
    // The read probe (bench_decode: every thread sums its slice) is the ceiling of a kernel
    // that only reads; the page size decides how often the stream crosses a page.
    const double read = get(j, "read_gbps");
    if (read > 0)
      row.bound += fmt::format("; a pure read reaches {:.2f} GB/s here, the kernel {} of it", read,
                               pct(std::min(get(c, "frac_read"), get(pg, "frac_read"))));
    if (j.contains("huge_pages") && j["huge_pages"].is_boolean())
      row.bound += j["huge_pages"].get<bool>()
                       ? fmt::format("; the cache in 2 MiB pages ({:.0f} MiB landed in huge pages)",
                                     get(j, "anon_huge_mib"))
                       : "; the cache in 4 KiB pages: a head's K stream crosses a page every "
                         "4096 / (2·head_dim) keys (`bench_decode --huge-pages` measures the "
                         "2 MiB-page figure)";
  }
  return row;
}

// Selected: bench_selected's k08 GFLOP per CPU-second over the FLOPs kept, against its peak.
TargetRow selected_target(const InputFile& f) {
  const std::string path = default_path(f, "bench_selected");
  const std::string command = fmt::format(
      "build/bench_selected --n 16384 --k 2048 --heads 8 --head-dim 64 --json {}", path);
  const std::string threshold = "≥ 50% of the FMA peak per CPU-second, on the FLOPs the "
                                "selection keeps";
  std::string what = "selected attention `cpu_k08_selected_gather`, one causal list of K keys "
                     "per query shared by every head (H_sel 1, H_kv 1)";
  if (auto p = file_problem(f, "bench_selected", command, {"kernels", "peak_cpu_gflops"}))
    return file_row("selected_k08", what, threshold, p->first, p->second);
  const json& j = f.json;
  auto get = [](const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
  };
  what += fmt::format(", n {}, K {}, H_q {}, head_dim {}, {} thread{} (`{}`)", get(j, "n"),
                      get(j, "k"), get(j, "num_heads"), get(j, "head_dim"), get(j, "threads"),
                      get(j, "threads") == 1 ? "" : "s", path);
  const json *k08 = nullptr, *bf16 = nullptr;
  if (j["kernels"].is_array())
    for (const json& k : j["kernels"]) {
      const std::string name = k.is_object() ? k.value("name", std::string()) : "";
      if (name == "cpu_k08_selected_gather") k08 = &k;
      if (name == "cpu_k08_selected_gather_bf16") bf16 = &k;
    }
  if (!k08 || get(*k08, "gflop_per_cpu_s") <= 0)
    return file_row("selected_k08", what, threshold, "see file",
                    fmt::format("`{}` has no `cpu_k08_selected_gather` figures", path));
  TargetRow row = file_row("selected_k08", what, threshold, "", "");
  const double frac = get(*k08, "frac_peak"), rate = get(*k08, "gflop_per_cpu_s");
  row.measured = fmt::format("{:.1f} GFLOP per CPU-second = {} of the peak's {:.1f} ({:.3f} CPU-s "
                             "per call)",
                             rate, pct(frac), get(j, "peak_cpu_gflops"),
                             get(*k08, "cpu_s_per_call"));
  if (bf16)
    row.measured += fmt::format("; bf16 twin {:.2f}× k08's CPU time ({} of the peak)",
                                get(*bf16, "cpu_time_vs_k08"), pct(get(*bf16, "frac_peak")));
  row.values = j;
  row.status = frac >= 0.5 ? "met" : "not met";
  if (frac < 0.5) {
    const double cpu_s = get(*k08, "cpu_s_per_call");
    const double d = get(j, "head_dim");
    row.bound = fmt::format(
        "gathered rows: {:.1f} MB of k and v rows per call (each row once for the {} heads of a "
        "list) = {:.2f} GB/s per CPU-second at the measured rate, scattered over the cache; the "
        "scorer is broadcast-bound: one broadcast load of a key's two floats per FMA ({} loads "
        "and {} FMAs per key and list at head_dim {}), so the load ports, not the FMA pipes, set "
        "its pace",
        get(j, "gathered_bytes") * 1e-6, get(j, "num_heads"),
        cpu_s > 0 ? get(j, "gathered_bytes") / cpu_s * 1e-9 : 0.0, d / 2, d / 2, d);
  }
  return row;
}

}  // namespace

double fma_pipe_bound(int64_t head_dim, int softmax_ops) {
  const double fmas = 2.0 * static_cast<double>(head_dim);
  return fmas / (fmas + softmax_ops);
}

std::vector<BenchPoint> parse_bench_points(const json& bench) {
  if (!bench.is_object() || !bench.contains("benchmarks") || !bench["benchmarks"].is_array())
    throw std::runtime_error("not a Google Benchmark JSON file: no \"benchmarks\" array");
  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, std::vector<BenchPoint>> groups;
  for (const json& b : bench["benchmarks"]) {
    if (!b.is_object()) continue;
    if (b.value("run_type", std::string("iteration")) != "iteration") continue;
    // "kernel/family/D64/seq_len:4096/min_time:.../real_time"
    const std::string name = b.value("run_name", b.value("name", std::string()));
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      const size_t slash = name.find('/', at);
      parts.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    if (parts.size() < 4 || parts[2].size() < 2 || parts[2][0] != 'D' ||
        parts[3].rfind("seq_len:", 0) != 0)
      continue;
    BenchPoint p;
    p.kernel = parts[0];
    p.family = parts[1];
    try {
      p.head_dim = std::stoll(parts[2].substr(1));
      p.seq_len = std::stoll(parts[3].substr(8));
    } catch (const std::exception&) {
      continue;
    }
    if (b.value("error_occurred", false)) {
      p.error = b.value("error_message", std::string("error"));
    } else {
      p.real_ms = to_ms(num(b, "real_time"), b.value("time_unit", std::string("ns")));
      p.flops = num(b, "flops");
      p.dense_flops = num(b, "dense_flops");
      p.gflops = num(b, "GFLOP/s");
      p.cpu_gflops = num(b, "cpu_GFLOP/s");
      p.frac_peak = num(b, "frac_peak");
      p.cpu_frac_peak = num(b, "cpu_frac_peak");
      p.peak_gflops = num(b, "peak_gflops");
      p.peak_cpu_gflops = num(b, "peak_cpu_gflops");
    }
    groups[{p.kernel, p.family, p.head_dim, p.seq_len}].push_back(p);
  }
  std::vector<BenchPoint> out;
  for (auto& [key, reps] : groups) {
    std::sort(reps.begin(), reps.end(), [](const BenchPoint& a, const BenchPoint& b) {
      return a.cpu_frac_peak < b.cpu_frac_peak;
    });
    out.push_back(reps[reps.size() / 2]);
  }
  return out;
}

std::map<int64_t, EngineCeiling> parse_engine_ceilings(const json& bench) {
  std::map<int64_t, EngineCeiling> out;
  if (!bench.is_object() || !bench.contains("benchmarks") || !bench["benchmarks"].is_array())
    return out;
  for (const json& b : bench["benchmarks"]) {
    if (!b.is_object() || b.value("error_occurred", false)) continue;
    const std::string name = b.value("run_name", b.value("name", std::string()));
    if (name.rfind("engine_parts/D", 0) != 0) continue;  // "engine_parts/D64/iterations:1"
    EngineCeiling e;
    e.head_dim = static_cast<int64_t>(num(b, "head_dim"));
    e.qk = num(b, "qk_frac_peak");
    e.pv = num(b, "pv_frac_peak");
    e.step = num(b, "step_frac_peak");
    if (e.head_dim > 0 && e.step > 0) out[e.head_dim] = e;
  }
  return out;
}

TargetsReport evaluate_targets(const json& bench, const std::vector<PeerFile>& peers,
                               const ExtraFiles& extra) {
  const Points pts(parse_bench_points(bench));
  const json ctx = bench.value("context", json::object());
  auto ctx_str = [&](const char* key) {
    const auto it = ctx.find(key);
    if (it == ctx.end()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  Ctx c;
  c.quick = ctx_str("mode") == "quick";
  try {
    c.lanes = std::stoi(ctx_str("fma_probe_lanes"));
  } catch (const std::exception&) {
    c.lanes = 8;
  }
  const std::string isa = ctx_str("cpu_isa");
  c.has_bf16 = isa.find("avx512_bf16: yes") != std::string::npos;
  c.engine = parse_engine_ceilings(bench);
  c.bf16_engine = ctx_str("bf16_engine");

  TargetsReport report;
  json& rc = report.context;
  for (const char* key : {"date", "host_name", "mode", "cpu_isa", "bf16_engine", "bf16_dot_vs_fma",
                          "fma_probe_lanes", "omp_threads", "OMP_WAIT_POLICY", "peak_probe"})
    if (ctx.contains(key)) rc[key] = ctx[key];
  if (ctx.contains("load_avg")) rc["load_avg"] = ctx["load_avg"];
  auto ctx_num = [&](const char* key) {
    try {
      return std::stod(ctx_str(key));
    } catch (const std::exception&) {
      return 0.0;
    }
  };
  rc["peak_startup_gflops"] = ctx_num("peak_fma_gflops");
  rc["peak_startup_cpu_gflops"] = ctx_num("peak_fma_cpu_gflops");
  double lo = 0, hi = 0, clo = 0, chi = 0;
  bool any = false;
  for (const BenchPoint& p : pts.list()) {
    if (!p.error.empty() || p.peak_cpu_gflops <= 0) continue;
    if (!any) lo = hi = p.peak_gflops, clo = chi = p.peak_cpu_gflops;
    lo = std::min(lo, p.peak_gflops), hi = std::max(hi, p.peak_gflops);
    clo = std::min(clo, p.peak_cpu_gflops), chi = std::max(chi, p.peak_cpu_gflops);
    any = true;
  }
  if (any)
    rc["peak_interleaved"] = json{{"gflops_min", lo}, {"gflops_max", hi},
                                  {"cpu_gflops_min", clo}, {"cpu_gflops_max", chi}};

  auto& rows = report.rows;
  rows.push_back(frac_target(pts, c, "dense_d64", kDense, 64, 2048, std::nullopt, 0.85));
  rows.push_back(frac_target(pts, c, "dense_d128", kDense, 128, 2048, std::nullopt, 0.85));
  rows.push_back(frac_target(pts, c, "dense_d32", kDense, 32, 2048, std::nullopt, 0.65));
  rows.push_back(frac_target(pts, c, "window_w256", kWindow, 64, 0, 16384, 0.70));
  rows.push_back(speedup_target(pts, c, "window_w256_vs_dense", kWindow, 64, 16384, 0.9));
  rows.push_back(frac_target(pts, c, "longformer_w256_g2", kLongformer, 64, 0, 16384, 0.70));
  rows.push_back(speedup_target(pts, c, "longformer_w256_g2_vs_dense", kLongformer, 64, 16384, 0.9));
  rows.push_back(frac_target(pts, c, "bigbird_b64_r3", kBigBird, 64, 0, 16384, 0.70));
  for (TargetRow& r : engine_rows(c)) rows.push_back(std::move(r));
  for (TargetRow& r : bf16_targets(pts, c, 1.6)) rows.push_back(std::move(r));
  for (TargetRow& r : gqa_targets(extra.modern)) rows.push_back(std::move(r));
  rows.push_back(decode_target(extra.decode));
  rows.push_back(selected_target(extra.selected));
  for (TargetRow& r : peer_targets(peers, c, ctx_num("peak_fma_cpu_gflops"))) rows.push_back(std::move(r));
  return report;
}

json to_json(const TargetsReport& report) {
  json rows = json::array();
  for (const TargetRow& r : report.rows)
    rows.push_back(json{{"id", r.id},
                        {"what", r.what},
                        {"threshold", r.threshold},
                        {"measured", r.measured},
                        {"status", r.status},
                        {"met", r.status == "met"     ? json(true)
                                : r.status == "not met" ? json(false)
                                                        : json()},
                        {"bound", r.bound},
                        {"values", r.values}});
  return json{{"context", report.context}, {"targets", rows}};
}

std::string to_markdown(const TargetsReport& report) {
  const json& c = report.context;
  auto str = [&](const char* key) {
    if (!c.contains(key)) return std::string("?");
    return c[key].is_string() ? c[key].get<std::string>() : c[key].dump();
  };
  std::string md = "# CPU performance targets\n\n";
  std::string load = "?";
  if (c.contains("load_avg") && c["load_avg"].is_array()) {
    load.clear();
    for (const json& x : c["load_avg"])
      if (x.is_number()) load += fmt::format("{}{:.2f}", load.empty() ? "" : ", ", x.get<double>());
  }
  md += fmt::format("bench_cpu run of {} ({} grid), ISA {}, {} OpenMP threads, load average {}.\n\n",
                    str("date"), str("mode"), str("cpu_isa"), str("omp_threads"), load);
  md += fmt::format("FMA peak probe: {:.1f} GFLOP/s wall, {:.1f} GFLOP/s per CPU-second at start-up",
                    c.value("peak_startup_gflops", 0.0), c.value("peak_startup_cpu_gflops", 0.0));
  if (c.contains("peak_interleaved")) {
    const json& p = c["peak_interleaved"];
    md += fmt::format("; re-probed next to each benchmark: {:.1f}–{:.1f} GFLOP/s wall, "
                      "{:.1f}–{:.1f} per CPU-second",
                      p.value("gflops_min", 0.0), p.value("gflops_max", 0.0),
                      p.value("cpu_gflops_min", 0.0), p.value("cpu_gflops_max", 0.0));
  }
  md += ". Every fraction below is against the probe next to its own benchmark.\n\n";
  md += "| target | threshold | measured | met | what bounds it |\n|---|---|---|---|---|\n";
  auto cell = [](std::string s) {
    for (size_t at = 0; (at = s.find('|', at)) != std::string::npos; at += 2) s.replace(at, 1, "\\|");
    return s;
  };
  for (const TargetRow& r : report.rows)
    md += fmt::format("| {} | {} | {} | {} | {} |\n", cell(r.what), cell(r.threshold),
                      cell(r.measured),
                      r.status == "met" ? "yes" : r.status == "not met" ? "**no**" : r.status,
                      r.bound.empty() ? "—" : cell(r.bound));
  return md;
}

}  // namespace sparseattn::bench
