// The backward benchmark: every CPU backward kernel of the registry
// (registry/backward_kernels.def) on the forward benchmark's patterns (api/families.h),
// validated before it is timed, with the time of its own forward kernel beside it.
//
//   build/bench_backward [--quick] [--benchmark_out=build/bench/bench_backward.json ...]
//     full:  optimized seq_len 512 … 8192 (dense … 4096), references 512 … 1024, head_dim 64
//     quick: optimized 512 … 2048, references 512
//
// Per benchmark (batch 1, 1 head), besides Google Benchmark's time of one backward call:
//   fwd_ms, bwd_ms   the fastest of kRepeats (9) calls of the forward kernel the backward names
//                    (its saved o and lse are what the backward consumes) and of the
//                    backward — minima, because on a shared machine other jobs only ever
//                    add time
//   bwd_over_fwd     bwd_ms / fwd_ms (FlashAttention-2 reports about 2.5 on GPUs: 5 block
//                    products against the forward's 2, Dao 2023, §3.1)
//   fwd_cpu_ms, bwd_cpu_ms, bwd_over_fwd_cpu   the same in process CPU time (threads
//                    summed): time slices lost to other jobs are not counted, so on a
//                    loaded machine this ratio is the stable one (run with OMP_NUM_THREADS=1
//                    to leave out OpenMP barrier waits too)
//   flops            backward FLOPs of the pattern, 2 · nnz · (3 · head_dim + 2 · head_dim_v)
//                    (S, dQ, dK over head_dim; dP, dV over head_dim_v) = 2.5× the forward's
//   GFLOP/s          flops / time;  density  nnz / seq_len²
// Validation: dq, dk, dv against b1_dense_masked_grad (seq_len ≤ 2048) or b2_sparse_rows_grad
// (larger; b2 is checked against b1 on the test grid), at the kernel's declared tolerance.
// A kernel that fails reports the checker's reason instead of a time, and the run exits 1.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "api/families.h"
#include "core/check.h"
#include "core/seeded_inputs.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"

namespace sparseattn::bench {
namespace {

constexpr int kRepeats = 9;
int g_errors = 0;

struct Case {
  std::string key;
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  Tensor<double> dout;
  PatternStats stats;
  GradientResult oracle;
  bool has_oracle = false;
};

Case& case_for(const api::Family& family, int64_t n, int64_t head_dim) {
  static Case current;
  const std::string key = family.name + "/" + std::to_string(n) + "/" + std::to_string(head_dim);
  if (current.key == key) return current;
  current = Case{};
  current.pattern = std::make_unique<Pattern>(materialize(family.spec(n, 0), {1, 1, n, n}));
  const uint64_t seed = testing_inputs::seed_of(key);
  current.problem = make_problem(testing_inputs::random_tensor({1, 1, n, head_dim}, seed),
                                 testing_inputs::random_tensor({1, 1, n, head_dim}, seed + 1),
                                 testing_inputs::random_tensor({1, 1, n, head_dim}, seed + 2),
                                 *current.pattern, nullptr);
  current.dout = testing_inputs::random_tensor({1, 1, n, head_dim}, seed + 3);
  current.stats = pattern_stats(*current.pattern);
  current.key = key;
  return current;
}

// Wall and process CPU seconds (all threads summed) of one call of f.
struct Seconds {
  double wall, cpu;
};
double process_cpu_now() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
Seconds seconds_of(const std::function<void()>& f) {
  const double c0 = process_cpu_now();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {wall, process_cpu_now() - c0};
}

std::string validate(const GradKernel& kernel, Case& c, const GradOutput& out) {
  if (!c.has_oracle) {
    const Problem& p = c.problem;
    c.oracle = p.shape.seq_len_q <= 2048
                   ? b1_dense_masked_grad(p.q, p.k, p.v, c.dout, *p.pattern, &p.scale)
                   : b2_sparse_rows_grad(p.q, p.k, p.v, c.dout, *p.pattern, &p.scale);
    c.has_oracle = true;
  }
  const Tolerance tol{kernel.atol, kernel.rtol};
  const bool f32 = kernel.dtype == DType::float32;
  const Tensor<double>* refs[3] = {&c.oracle.dq, &c.oracle.dk, &c.oracle.dv};
  const Tensor<double>* got64[3] = {&out.dq, &out.dk, &out.dv};
  const Tensor<float>* got32[3] = {&out.dq32, &out.dk32, &out.dv32};
  const char* names[3] = {"dq", "dk", "dv"};
  for (int t = 0; t < 3; ++t) {
    const CheckReport r = f32 ? check_close(*got32[t], *refs[t], tol) : check_close(*got64[t], *refs[t], tol);
    if (!r.pass) return std::string(names[t]) + ": " + r.reason;
  }
  return "";
}

void run_backward(benchmark::State& state, const GradKernel* kernel, const api::Family* family,
                  int64_t head_dim) {
  const int64_t n = state.range(0);
  Case& c = case_for(*family, n, head_dim);
  const Kernel& forward = find_kernel(kernel->forward);
  GradProblem gp = make_grad_problem(c.problem, c.dout);
  GradOutput out;
  try {
    save_forward(*kernel, gp);
    kernel->run(gp, out);
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("kernel threw: ") + e.what()).c_str());
    ++g_errors;
    return;
  }
  const std::string failure = validate(*kernel, c, out);
  if (!failure.empty()) {
    state.SkipWithError(("validation failed: " + failure).c_str());
    ++g_errors;
    return;
  }
  double fwd = INFINITY, bwd = INFINITY, fwd_cpu = INFINITY, bwd_cpu = INFINITY;
  for (int r = 0; r < kRepeats; ++r) {  // interleaved, so both see the same machine load
    const Seconds f = seconds_of([&] {
      Output o;
      forward.run(c.problem, o);
      benchmark::DoNotOptimize(o.o.data.data());
      benchmark::DoNotOptimize(o.o32.data.data());
    });
    const Seconds b = seconds_of([&] {
      GradOutput g;
      kernel->run(gp, g);
      benchmark::DoNotOptimize(g.dq32.data.data());
      benchmark::DoNotOptimize(g.dq.data.data());
    });
    fwd = std::min(fwd, f.wall);
    bwd = std::min(bwd, b.wall);
    fwd_cpu = std::min(fwd_cpu, f.cpu);
    bwd_cpu = std::min(bwd_cpu, b.cpu);
  }
  for (auto _ : state) {
    GradOutput g;
    kernel->run(gp, g);
    benchmark::DoNotOptimize(g.dq32.data.data());
    benchmark::DoNotOptimize(g.dq.data.data());
  }
  const double nnz = static_cast<double>(c.stats.nnz);
  const double flops = 2.0 * nnz * (3.0 * head_dim + 2.0 * head_dim);
  using benchmark::Counter;
  state.counters["fwd_ms"] = fwd * 1e3;
  state.counters["bwd_ms"] = bwd * 1e3;
  state.counters["bwd_over_fwd"] = bwd / fwd;
  state.counters["fwd_cpu_ms"] = fwd_cpu * 1e3;
  state.counters["bwd_cpu_ms"] = bwd_cpu * 1e3;
  state.counters["bwd_over_fwd_cpu"] = bwd_cpu / fwd_cpu;
  state.counters["flops"] = flops;
  state.counters["GFLOP/s"] = Counter(flops / 1e9, Counter::kIsIterationInvariantRate);
  state.counters["density"] = c.stats.density;
  state.counters["seq_len"] = static_cast<double>(n);
  state.counters["threads"] = kernel->target == Target::cpu ? omp_get_max_threads() : 1;
  state.SetLabel(std::string("forward ") + kernel->forward + ", " + describe(c.pattern->spec));
}

void register_all(bool quick) {
  for (const api::Family& family : api::families()) {
    if (!family.cpu) continue;
    const Pattern probe = materialize(family.spec(512, 0), {1, 1, 512, 512});
    const int64_t max_n = quick ? 2048 : (family.dense_sizes ? 4096 : 8192);
    for (const GradKernel& kernel : grad_kernels()) {
      if (kernel.target == Target::cuda || !kernel.serves(probe)) continue;
      const bool reference = kernel.target == Target::reference;
      const std::string name = std::string(kernel.name) + "/" + family.name + "/D64";
      auto* b = benchmark::RegisterBenchmark(name.c_str(), run_backward, &kernel, &family, int64_t{64});
      for (int64_t n = 512; n <= (reference ? (quick ? 512 : 1024) : max_n); n *= 2) b->Arg(n);
      b->ArgName("seq_len")->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(quick ? 0.05 : 0.3);
    }
  }
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) {
  bool quick = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("mode", quick ? "quick" : "full");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  sparseattn::bench::register_all(quick);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (sparseattn::bench::g_errors > 0) {
    std::fprintf(stderr, "bench_backward: %d benchmark(s) reported an error instead of a time\n",
                 sparseattn::bench::g_errors);
    return 1;
  }
  return 0;
}
