// bench_modern_grad: what the attention of current models costs the CPU backward kernel kb01
// (contract §7.7), as ratios within one interleaved run — never absolute times across runs
// (docs/benchmarks.md, "Modern attention in the backward pass").
//
//   build/bench_modern_grad [--n 2048] [--head-dim 64] [--heads 8] [--rounds 5] [--repeats 2]
//                           [--kernel cpu_kb01_generic_tiles_grad]
//
// Variants, float32, batch 1, H_q = --heads query heads, dense (not causal), seq_len n:
// plain multi-head attention (H_kv = H_q) as the baseline; grouped-query attention with
// g = H_q (H_kv = 1) on the same q and dO; softcap 50; sinks; ALiBi slopes 2^(-8(h+1)/H).
// Each variant is first checked at n = 192 (same heads, head_dim, modifiers) against the
// float64 gradient oracle b1_dense_masked_grad at the kernel's tolerance (dq, dk, dv, dsinks),
// then timed at n; only the backward call is timed (the forward's saved o and lse are made
// once per variant). A round runs every variant once (--repeats calls, their median) after
// one unrecorded warm-up round; a ratio is variant / baseline within a round, and the
// program prints per ratio the median over the rounds with the lowest and highest — in
// process CPU time (threads summed; CLOCK_PROCESS_CPUTIME_ID), which time slices lost to
// other jobs on a shared machine do not inflate (run with OMP_NUM_THREADS=1 to leave out
// OpenMP barrier waits too), and in wall-clock time beside it.
// Exits 1 if a variant fails its check.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/seeded_inputs.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"

namespace sparseattn::bench {
namespace {

struct Options {
  int64_t n = 2048, head_dim = 64, heads = 8, rounds = 5, repeats = 2;
  std::string kernel = "cpu_kb01_generic_tiles_grad";
};

struct Variant {
  std::string name;
  int64_t kv_heads;
  ScoreMods mods;
  std::unique_ptr<Pattern> pattern;
  std::unique_ptr<Problem> problem;
  GradProblem gp;
  std::vector<double> medians, cpu_medians;  // seconds per call (wall, CPU), one per round
};

// q, k, v, dO for n tokens (k, v with kv_heads heads: kv head 0 is MHA's head 0).
struct Tensors {
  Tensor<double> q, k, v, dout;
};
Tensors tensors(const Options& o, int64_t n, int64_t kv_heads) {
  const int64_t H = o.heads, d = o.head_dim;
  return {testing_inputs::random_tensor({1, H, n, d}, 1),
          testing_inputs::random_tensor({1, kv_heads, n, d}, 2),
          testing_inputs::random_tensor({1, kv_heads, n, d}, 3),
          testing_inputs::random_tensor({1, H, n, d}, 4)};
}

// The variant's backward at n = 192 against b1; prints the failure and returns false.
bool check_small(const Options& o, const GradKernel& kernel, const Variant& v) {
  const int64_t n = 192;
  const Pattern pattern = materialize(PatternSpec{}, {1, o.heads, n, n});
  const Tensors t = tensors(o, n, v.kv_heads);
  const GradientResult ref = b1_dense_masked_grad(t.q, t.k, t.v, t.dout, pattern, nullptr, v.mods);
  const Problem p = make_problem(t.q, t.k, t.v, pattern, nullptr, v.mods);
  GradProblem gp = make_grad_problem(p, t.dout);
  save_forward(kernel, gp);
  GradOutput out;
  kernel.run(gp, out);
  const Tolerance tol{kernel.atol, kernel.rtol};
  std::vector<CheckReport> reports = {check_close(out.dq32, ref.dq, tol),
                                      check_close(out.dk32, ref.dk, tol),
                                      check_close(out.dv32, ref.dv, tol)};
  if (v.mods.has_sinks()) reports.push_back(check_close(out.dsinks, ref.dsinks, tol));
  for (const CheckReport& r : reports)
    if (!r.pass) {
      std::fprintf(stderr, "%s failed its check at n = 192: %s\n", v.name.c_str(), r.reason.c_str());
      return false;
    }
  return true;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
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
    else if (f == "--rounds") opt.rounds = parse_int("--rounds", val), ++a;
    else if (f == "--repeats") opt.repeats = parse_int("--repeats", val), ++a;
    else if (f == "--kernel") opt.kernel = val, ++a;
    else {
      std::fprintf(stderr, "unknown argument %s (see bench/bench_modern_grad.cpp)\n", f.c_str());
      return 2;
    }
  }
  const GradKernel& kernel = find_grad_kernel(opt.kernel);
  const int64_t H = opt.heads;
  ScoreMods cap, sinks, alibi;
  cap.softcap = 50.0;
  sinks.sinks = testing_inputs::random_tensor({H}, 5, -1.0, 2.0);
  alibi.alibi_slopes = Tensor<double>({H});
  for (int64_t h = 0; h < H; ++h)
    alibi.alibi_slopes->data[h] = std::exp2(-8.0 * static_cast<double>(h + 1) / H);

  std::vector<std::unique_ptr<Variant>> vs;
  auto add = [&](const std::string& name, int64_t kv_heads, ScoreMods mods) {
    auto v = std::make_unique<Variant>();
    v->name = name;
    v->kv_heads = kv_heads;
    v->mods = std::move(mods);
    vs.push_back(std::move(v));
  };
  add("mha", H, {});
  add("gqa g=" + std::to_string(H), 1, {});
  add("softcap 50", H, cap);
  add("sinks", H, sinks);
  add("alibi", H, alibi);
  for (auto& v : vs) {
    if (!check_small(opt, kernel, *v)) return 1;
    v->pattern = std::make_unique<Pattern>(materialize(PatternSpec{}, {1, H, opt.n, opt.n}));
    Tensors t = tensors(opt, opt.n, v->kv_heads);
    v->problem = std::make_unique<Problem>(
        make_problem(std::move(t.q), std::move(t.k), std::move(t.v), *v->pattern, nullptr, v->mods));
    v->gp = make_grad_problem(*v->problem, std::move(t.dout));
    save_forward(kernel, v->gp);
  }
  for (int64_t round = 0; round <= opt.rounds; ++round) {
    for (auto& v : vs) {
      std::vector<double> secs, cpu;
      for (int64_t r = 0; r < opt.repeats; ++r) {
        GradOutput out;
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        kernel.run(v->gp, out);
        cpu.push_back(cpu_seconds() - c0);
        secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      if (round > 0) {
        v->medians.push_back(median_of(secs));
        v->cpu_medians.push_back(median_of(cpu));
      }
    }
    std::fprintf(stderr, "round %lld of %lld done%s\n", static_cast<long long>(round),
                 static_cast<long long>(opt.rounds), round == 0 ? " (warm-up, not recorded)" : "");
  }
  std::printf("bench_modern_grad: %s, dense, n %lld, head_dim %lld, H_q %lld, %d threads, %lld rounds\n",
              kernel.name, static_cast<long long>(opt.n), static_cast<long long>(opt.head_dim),
              static_cast<long long>(H), omp_get_max_threads(), static_cast<long long>(opt.rounds));
  std::printf("%-14s %10s %8s %8s %8s | %10s %8s %8s %8s\n", "variant", "cpu ms", "ratio",
              "min", "max", "wall ms", "ratio", "min", "max");
  const Variant& base = *vs[0];
  for (const auto& v : vs) {
    std::vector<double> cpu, wall;
    for (size_t r = 0; r < v->medians.size(); ++r) {
      cpu.push_back(v->cpu_medians[r] / base.cpu_medians[r]);
      wall.push_back(v->medians[r] / base.medians[r]);
    }
    std::printf("%-14s %10.1f %8.3f %8.3f %8.3f | %10.1f %8.3f %8.3f %8.3f\n", v->name.c_str(),
                1e3 * median_of(v->cpu_medians), median_of(cpu),
                *std::min_element(cpu.begin(), cpu.end()), *std::max_element(cpu.begin(), cpu.end()),
                1e3 * median_of(v->medians), median_of(wall),
                *std::min_element(wall.begin(), wall.end()), *std::max_element(wall.begin(), wall.end()));
  }
  return 0;
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) {
  try {
    return sparseattn::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_modern_grad: %s\n", e.what());
    return 1;
  }
}
