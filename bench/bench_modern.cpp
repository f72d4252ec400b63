// bench_modern: what the attention of current models costs the optimized CPU kernels
// (contract §2.7–§2.9), as ratios within one interleaved run — never absolute times across
// runs (docs/benchmarks.md, "Modern attention: the cost of GQA, softcap, sinks and ALiBi").
//
//   build/bench_modern [--n 4096] [--head-dim 64] [--heads 8] [--window 256] [--rounds 5]
//                      [--repeats 2] [--json FILE]
//
// The variants, float32, batch 1, H_q = --heads query heads, seq_len n, head_dim d:
//   dense  k01 and window (w, dilation 1) k02 and k06: plain multi-head attention (H_kv = H_q)
//          against grouped-query attention with g = H_q (H_kv = 1) on the same q — expected
//          <= 1.0x: the same FLOPs, one kv panel packed instead of H_q;
//   dense  k01: softcap 50, sinks, ALiBi slopes (2^-(8(h+1)/H), Press et al. 2022) against
//          plain — targets softcap <= 1.15x, sinks <= 1.02x, ALiBi <= 1.10x.
// Every variant goes through the harness (api/measure.h): checked against the oracle
// a1_dense_masked WITH its modifiers and grouped heads (computed here on query head 0 and
// the kv head it reads, the head prefix the harness compares: the O(n²) float64 oracle of
// all heads would take minutes), then timed only if it passed. A round runs every variant
// once (--repeats timed calls each, median), after one unrecorded warm-up round; a ratio is
// variant / baseline within a round, and the program prints, per ratio, the median over the
// rounds with the lowest and highest.
// Exits 1 if a variant fails its check.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/measure.h"
#include "api/oracle.h"
#include "core/seeded_inputs.h"
#include "optimized/cpu/isa.h"
#include "reference/attention.h"
#include "registry/registry.h"

namespace sparseattn::bench {
namespace {

struct Options {
  int64_t n = 4096, head_dim = 64, heads = 8, window = 256, rounds = 5, repeats = 2;
  std::string json;
};

// x[:, :heads] of a [1, H, L, D] tensor.
Tensor<double> head_prefix(const Tensor<double>& x, int64_t heads) {
  Tensor<double> y({1, heads, x.dim(2), x.dim(3)});
  std::copy(x.data.begin(), x.data.begin() + static_cast<std::ptrdiff_t>(y.numel()),
            y.data.begin());
  return y;
}

// The modifiers of query head 0 ([H_q] slopes and sinks cut to [1]).
ScoreMods head0_mods(const ScoreMods& m) {
  ScoreMods o;
  o.softcap = m.softcap;
  auto first = [](const Tensor<double>& t) {
    Tensor<double> f({1});
    f.data[0] = t.data[0];
    return f;
  };
  if (m.alibi_slopes) o.alibi_slopes = first(*m.alibi_slopes);
  if (m.sinks) o.sinks = first(*m.sinks);
  return o;
}

// One variant: its kernel, problem and oracle (query head 0 and its kv head).
struct Variant {
  std::string name;      // "dense k01 gqa g=8"
  std::string baseline;  // the variant it is divided by ("" for a baseline)
  const Kernel* kernel = nullptr;
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  api::Oracle oracle;
  std::vector<double> medians;  // seconds per call, one per round
};

PatternSpec spec_of(const std::string& kind, int64_t window) {
  PatternSpec s;
  if (kind == "window") {
    s.kind = PatternKind::window;
    s.window = window;
  }
  return s;
}

// Builds the variant and its oracle: a1_dense_masked (with the modifiers) on query head 0,
// wrapped by api::full_oracle, which the harness compares with head 0 of the kernel's output.
std::unique_ptr<Variant> make_variant(const Options& opt, const std::string& name,
                                      const std::string& baseline, const char* kernel,
                                      const std::string& kind, int64_t kv_heads, ScoreMods mods) {
  auto v = std::make_unique<Variant>();
  v->name = name;
  v->baseline = baseline;
  v->kernel = &find_kernel(kernel);
  const int64_t H = opt.heads, n = opt.n, d = opt.head_dim;
  v->pattern = std::make_unique<Pattern>(materialize(spec_of(kind, opt.window), {1, H, n, n}));
  // The same q for every variant; k, v drawn with H_kv heads (kv head 0 the same as MHA's).
  Tensor<double> q = testing_inputs::random_tensor({1, H, n, d}, 1);
  Tensor<double> k = head_prefix(testing_inputs::random_tensor({1, H, n, d}, 2), kv_heads);
  Tensor<double> vv = head_prefix(testing_inputs::random_tensor({1, H, n, d}, 3), kv_heads);
  const Pattern one = materialize(spec_of(kind, opt.window), {1, 1, n, n});
  std::fprintf(stderr, "oracle for %s (head 0, float64, serial) ...\n", name.c_str());
  const ScoreMods mods0 = head0_mods(mods);
  AttentionResult ref = a1_dense_masked(head_prefix(q, 1), head_prefix(k, 1), head_prefix(vv, 1),
                                        one, nullptr, mods0);
  const Problem p1 = make_problem(head_prefix(q, 1), head_prefix(k, 1), head_prefix(vv, 1), one,
                                  nullptr, mods0);
  v->oracle = api::full_oracle(p1, std::move(ref.o), std::move(ref.lse));
  v->problem = make_problem(std::move(q), std::move(k), std::move(vv), *v->pattern, nullptr,
                            std::move(mods));
  return v;
}

double median_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t m = x.size() / 2;
  return x.size() % 2 ? x[m] : 0.5 * (x[m - 1] + x[m]);
}

int64_t parse_int(const char* flag, const char* value) {
  char* end = nullptr;
  const long long x = std::strtoll(value, &end, 10);
  if (end == value || *end != '\0' || x <= 0) {
    std::fprintf(stderr, "invalid %s = %s: must be a positive integer\n", flag, value);
    std::exit(2);
  }
  return x;
}

int run(int argc, char** argv) {
  Options opt;
  for (int a = 1; a < argc; ++a) {
    const std::string f = argv[a];
    const char* val = a + 1 < argc ? argv[a + 1] : "";
    if (f == "--n") opt.n = parse_int("--n", val), ++a;
    else if (f == "--head-dim") opt.head_dim = parse_int("--head-dim", val), ++a;
    else if (f == "--heads") opt.heads = parse_int("--heads", val), ++a;
    else if (f == "--window") opt.window = parse_int("--window", val), ++a;
    else if (f == "--rounds") opt.rounds = parse_int("--rounds", val), ++a;
    else if (f == "--repeats") opt.repeats = parse_int("--repeats", val), ++a;
    else if (f == "--json") opt.json = val, ++a;
    else {
      std::fprintf(stderr, "unknown argument %s (see bench/bench_modern.cpp)\n", f.c_str());
      return 2;
    }
  }
  const int64_t H = opt.heads;
  ScoreMods cap, sinks, alibi;
  cap.softcap = 50.0;
  sinks.sinks = testing_inputs::random_tensor({H}, 4, -1.0, 2.0);
  alibi.alibi_slopes = Tensor<double>({H});
  for (int64_t h = 0; h < H; ++h)  // the paper's geometric slopes 2^(-8(h+1)/H)
    alibi.alibi_slopes->data[h] = std::exp2(-8.0 * static_cast<double>(h + 1) / H);
  const std::string g = "gqa g=" + std::to_string(H);

  std::vector<std::unique_ptr<Variant>> vs;
  vs.push_back(make_variant(opt, "dense k01 mha", "", "cpu_k01_dense_flash", "dense", H, {}));
  vs.push_back(make_variant(opt, "dense k01 " + g, "dense k01 mha", "cpu_k01_dense_flash", "dense", 1, {}));
  vs.push_back(make_variant(opt, "dense k01 softcap", "dense k01 mha", "cpu_k01_dense_flash", "dense", H, cap));
  vs.push_back(make_variant(opt, "dense k01 sinks", "dense k01 mha", "cpu_k01_dense_flash", "dense", H, sinks));
  vs.push_back(make_variant(opt, "dense k01 alibi", "dense k01 mha", "cpu_k01_dense_flash", "dense", H, alibi));
  vs.push_back(make_variant(opt, "window k02 mha", "", "cpu_k02_window_band", "window", H, {}));
  vs.push_back(make_variant(opt, "window k02 " + g, "window k02 mha", "cpu_k02_window_band", "window", 1, {}));
  vs.push_back(make_variant(opt, "window k06 mha", "", "cpu_k06_generic_tiles", "window", H, {}));
  vs.push_back(make_variant(opt, "window k06 " + g, "window k06 mha", "cpu_k06_generic_tiles", "window", 1, {}));

  api::TimingPlan plan;
  plan.repeats = opt.repeats;
  plan.warmup = 0;
  plan.reuse_output = true;
  // Round 0 warms the caches, the page tables and the OpenMP team and is not recorded.
  for (int64_t round = 0; round <= opt.rounds; ++round) {
    for (auto& v : vs) {  // interleaved: every variant once per round
      const api::Measurement m = api::measure(*v->kernel, v->problem, v->oracle, plan);
      if (!m.timed) {
        std::fprintf(stderr, "%s failed its check: %s\n", v->name.c_str(), m.check.failure.c_str());
        return 1;
      }
      if (round > 0) v->medians.push_back(m.median());
    }
    std::fprintf(stderr, "round %lld of %lld done%s\n", static_cast<long long>(round),
                 static_cast<long long>(opt.rounds), round == 0 ? " (warm-up, not recorded)" : "");
  }

  auto find = [&](const std::string& name) -> const Variant& {
    for (auto& v : vs)
      if (v->name == name) return *v;
    std::abort();
  };
  std::string json = "{\n  \"isa\": \"" + std::string(cpu::isa_name(cpu::active_isa())) +
                     "\", \"threads\": " + std::to_string(omp_get_max_threads()) +
                     ", \"n\": " + std::to_string(opt.n) + ", \"head_dim\": " +
                     std::to_string(opt.head_dim) + ", \"heads\": " + std::to_string(H) +
                     ", \"window\": " + std::to_string(opt.window) + ", \"rounds\": " +
                     std::to_string(opt.rounds) + ",\n  \"variants\": [\n";
  std::printf("bench_modern: n %lld, head_dim %lld, H_q %lld, %s build, %d threads, %lld rounds\n",
              static_cast<long long>(opt.n), static_cast<long long>(opt.head_dim),
              static_cast<long long>(H), cpu::isa_name(cpu::active_isa()), omp_get_max_threads(),
              static_cast<long long>(opt.rounds));
  std::printf("%-24s %12s %-16s %8s %8s %8s\n", "variant", "median ms", "vs", "ratio", "min",
              "max");
  for (size_t i = 0; i < vs.size(); ++i) {
    const Variant& v = *vs[i];
    const double ms = 1e3 * median_of(v.medians);
    std::vector<double> ratios;
    if (!v.baseline.empty()) {
      const Variant& base = find(v.baseline);
      for (size_t r = 0; r < v.medians.size(); ++r) ratios.push_back(v.medians[r] / base.medians[r]);
    }
    char line[512];
    if (ratios.empty()) {
      std::printf("%-24s %12.1f\n", v.name.c_str(), ms);
      std::snprintf(line, sizeof line, "    {\"name\": \"%s\", \"median_ms\": %.3f}", v.name.c_str(), ms);
    } else {
      const double med = median_of(ratios);
      const double lo = *std::min_element(ratios.begin(), ratios.end());
      const double hi = *std::max_element(ratios.begin(), ratios.end());
      std::printf("%-24s %12.1f %-16s %8.3f %8.3f %8.3f\n", v.name.c_str(), ms,
                  v.baseline.c_str(), med, lo, hi);
      std::snprintf(line, sizeof line,
                    "    {\"name\": \"%s\", \"median_ms\": %.3f, \"vs\": \"%s\", \"ratio\": %.4f, "
                    "\"ratio_min\": %.4f, \"ratio_max\": %.4f}",
                    v.name.c_str(), ms, v.baseline.c_str(), med, lo, hi);
    }
    json += std::string(line) + (i + 1 < vs.size() ? ",\n" : "\n");
  }
  json += "  ]\n}\n";
  if (!opt.json.empty()) {
    const std::string tmp = opt.json + ".tmp";  // no half-written file (contract §5.4)
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), opt.json.c_str()) != 0) {
      std::fprintf(stderr, "cannot write %s\n", opt.json.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) {
  try {
    return sparseattn::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_modern: %s\n", e.what());
    return 1;
  }
}
