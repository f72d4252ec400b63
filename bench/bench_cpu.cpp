// The CPU benchmark suite: every registry kernel that runs on the CPU (the optimized
// ladder and the serial float64 references) on the patterns the issue names, timed with
// Google Benchmark after being validated against the oracle (the harness, api/measure.h).
//
//   build/bench_cpu [--quick] [--benchmark_out=build/bench/bench_cpu.json ...]
//   make bench        full sizes: sparse seq_len 512 … 65536, dense 512 … 16384,
//                     head_dim 64 (and 128 for dense, window, bigbird; 32 for dense),
//                     references up to 4096
//   make bench-quick  sparse 512 … 4096, dense 512 … 2048, references at 512, head_dim 64;
//                     dense head_dim 32 and 128 at 2048 only
// Then bench_targets (bench/targets.h) reads the JSON and writes targets.md / targets.json.
//
// Every benchmark reports, per call (batch 1, 1 head):
//   flops        computed FLOPs, 4 · nnz · head_dim (pattern_stats / attention_flops)
//   dense_flops  the same for the dense pattern: 4 · seq_len² · head_dim
//   density      nnz / seq_len²
//   GFLOP/s      flops / time;   frac_peak  GFLOP/s over the FMA peak probed right before
//                this benchmark's timed loop (peak_gflops; the start-up probe is in the
//                JSON context as peak_fma_gflops)
//   cpu_GFLOP/s  flops per second of process CPU time (all threads summed); cpu_frac_peak
//                the same over that probe's rate per CPU-second (peak_cpu_gflops: one
//                running core)
//   bytes        q, k, v read + o, lse written once, in the kernel's dtype
//   peak_bytes   extra heap the call needed (api/alloc_tracker.h), outputs included
// and a Complexity() fit over seq_len per (kernel, pattern, head_dim) family.
// A kernel whose output fails validation reports the checker's reason instead of a time,
// and the run exits 1.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/alloc_tracker.h"
#include "api/families.h"
#include "api/measure.h"
#include "api/peak_probe.h"
#include "core/seeded_inputs.h"
#include "optimized/cpu/engine_probe.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "registry/registry.h"

namespace sparseattn::bench {
namespace {

using namespace api;  // the harness, the oracle, the families, the probes (api/)

Peak g_peak;  // measured at startup (main); each benchmark probes again (run_kernel)

// One problem (pattern, inputs, oracle) at a time: benchmarks are registered grouped by
// problem, so consecutive benchmarks share it and the O(n²) oracle is built once.
struct ProblemSet {
  std::string key;
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  PatternStats stats;
  std::unique_ptr<Oracle> oracle;
};

ProblemSet& problem_for(const Family& family, int64_t n, int64_t head_dim) {
  static ProblemSet current;
  const std::string key = family.name + "/" + std::to_string(n) + "/" + std::to_string(head_dim);
  if (current.key == key) return current;
  current = ProblemSet{};
  current.pattern = std::make_unique<Pattern>(materialize(family.spec(n, 0), {1, 1, n, n}));
  const uint64_t seed = testing_inputs::seed_of(key);
  current.problem = make_problem(testing_inputs::random_tensor({1, 1, n, head_dim}, seed),
                                 testing_inputs::random_tensor({1, 1, n, head_dim}, seed + 1),
                                 testing_inputs::random_tensor({1, 1, n, head_dim}, seed + 2),
                                 *current.pattern, nullptr);
  current.stats = pattern_stats(*current.pattern);
  current.key = key;
  return current;
}

// Benchmarks that reported an error instead of a time; main() exits 1 when any did, so a
// wrong kernel fails `make bench-quick` (and CI) rather than printing a quiet error row.
int g_errors = 0;

void run_kernel(benchmark::State& state, const Kernel* kernel, const Family* family,
                int64_t head_dim) {
  const int64_t n = state.range(0);
  ProblemSet& ps = problem_for(*family, n, head_dim);
  if (!ps.oracle) ps.oracle = std::make_unique<Oracle>(make_oracle(ps.problem));

  // The harness: one checked call, which also measures the call's extra heap; the timed
  // section (the probe and Google Benchmark's loop) runs only when it passed.
  Peak peak;
  double cpu_seconds = 0.0;
  TimingPlan plan;
  plan.heap = heap_probe();
  plan.timed_section = [&] {
    // The peak next to this measurement: a short probe right before the timed loop, so a
    // change of the machine's load since start-up does not skew frac_peak (a kernel timed
    // after other jobs stopped could otherwise show more than 100%).
    peak = measure_peak(kShortProbeRepeats, kShortProbeIterations);
    const double cpu0 = process_cpu_seconds();
    // One Output for the whole loop: the CPU entries keep buffers already of the right
    // shape (optimized/cpu/entries.cpp), so the loop times the kernel, not the allocator.
    Output o;
    for (auto _ : state) {
      kernel->run(ps.problem, o);
      benchmark::DoNotOptimize(o.o32.data.data());
      benchmark::DoNotOptimize(o.o.data.data());
    }
    cpu_seconds = process_cpu_seconds() - cpu0;
  };
  Measurement m;
  try {
    m = measure(*kernel, ps.problem, *ps.oracle, plan);
  } catch (const std::exception& e) {  // a kernel refusing its input is reported, not fatal
    state.SkipWithError((std::string("kernel threw: ") + e.what()).c_str());
    ++g_errors;
    return;
  }
  if (!m.timed) {
    state.SkipWithError(("validation failed: " + m.check.failure).c_str());
    ++g_errors;
    return;
  }
  const int64_t peak_bytes = m.peak_bytes;
  const double flops = attention_flops(ps.stats, head_dim, head_dim);
  const double dense_flops = 4.0 * static_cast<double>(n) * n * head_dim;
  const double elem = kernel->dtype == DType::float64                                    ? 8.0
                      : kernel->dtype == DType::bfloat16 || kernel->dtype == DType::float16 ? 2.0
                                                                                            : 4.0;
  using benchmark::Counter;
  state.counters["flops"] = flops;
  state.counters["dense_flops"] = dense_flops;
  state.counters["density"] = ps.stats.density;
  state.counters["GFLOP/s"] = Counter(flops / 1e9, Counter::kIsIterationInvariantRate);
  state.counters["frac_peak"] =
      Counter(flops / 1e9 / peak.gflops, Counter::kIsIterationInvariantRate);
  // The same per CPU-second (summed over threads) against one running core's peak: the
  // kernel's efficiency while it actually runs, which time slices lost to other jobs on a
  // shared machine do not dilute. OpenMP threads spinning at a barrier count as CPU time.
  const double cpu_gflops = flops * static_cast<double>(state.iterations()) / cpu_seconds / 1e9;
  state.counters["cpu_GFLOP/s"] = cpu_gflops;
  state.counters["cpu_frac_peak"] = cpu_gflops / peak.cpu_gflops;
  state.counters["peak_gflops"] = peak.gflops;
  state.counters["peak_cpu_gflops"] = peak.cpu_gflops;
  state.counters["bytes"] = elem * static_cast<double>(n) * (4 * head_dim + 1);
  state.counters["peak_bytes"] = static_cast<double>(peak_bytes);
  state.counters["seq_len"] = static_cast<double>(n);
  state.counters["head_dim"] = static_cast<double>(head_dim);
  state.counters["threads"] = kernel->target == Target::cpu ? omp_get_max_threads() : 1;
  state.SetComplexityN(n);
  state.SetLabel(describe(ps.pattern->spec));
}

void peak_fma(benchmark::State& state) {
  const int64_t iterations = 20'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(fma_probe(iterations));
  state.counters["GFLOP/s"] =
      benchmark::Counter(fma_probe_flops(iterations) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = omp_get_max_threads();
}

// The float32 engine's own ceiling here (optimized/cpu/engine_probe.h): its QKᵀ and P·V
// micro-kernels and a whole tile step, one thread, hot in cache, as fractions of the FMA
// probe per CPU-second taken right before on one thread, as the parts run (a core's clock
// differs with one or two cores busy). bench_targets sets these beside each dense and
// sparse target: a kernel cannot beat its engine's step on hot data.
void engine_parts(benchmark::State& state, int64_t head_dim) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Peak peak = measure_peak(kShortProbeRepeats, kShortProbeIterations);
  omp_set_num_threads(threads);
  // About 25 ms per part at 200 GFLOP per CPU-second.
  const int64_t chunks = 10'000 * 64 / head_dim;
  cpu::EngineProbe e;
  for (auto _ : state) e = cpu::engine_probe(head_dim, chunks, 3);
  const auto rate = [](double flops, double seconds) { return flops / seconds / 1e9; };
  state.counters["qk_cpu_gflops"] = rate(e.qk_flops, e.qk_seconds);
  state.counters["pv_cpu_gflops"] = rate(e.pv_flops, e.pv_seconds);
  state.counters["step_cpu_gflops"] = rate(e.step_flops, e.step_seconds);
  state.counters["qk_frac_peak"] = rate(e.qk_flops, e.qk_seconds) / peak.cpu_gflops;
  state.counters["pv_frac_peak"] = rate(e.pv_flops, e.pv_seconds) / peak.cpu_gflops;
  state.counters["step_frac_peak"] = rate(e.step_flops, e.step_seconds) / peak.cpu_gflops;
  state.counters["peak_cpu_gflops"] = peak.cpu_gflops;
  state.counters["head_dim"] = static_cast<double>(head_dim);
}

std::vector<int64_t> sizes(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t n = lo; n <= hi; n *= 2) v.push_back(n);
  return v;
}

void register_all(bool quick) {
  benchmark::RegisterBenchmark("peak_fma", peak_fma)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int64_t head_dim : {32, 64, 128})
    benchmark::RegisterBenchmark(("engine_parts/D" + std::to_string(head_dim)).c_str(), engine_parts,
                                 head_dim)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  const double min_time = quick ? 0.05 : 0.3;
  for (const Family& family : families()) {
    if (!family.cpu) continue;
    const int64_t max_n = quick ? (family.dense_sizes ? 2048 : 4096) : (family.dense_sizes ? 16384 : 65536);
    const int64_t max_ref_n = quick ? 512 : 4096;
    // head_dim 64 everywhere; 128 for dense, window and BigBird; 32 (the real data's) for
    // dense. The quick grid times dense 32 and 128 at n 2048 only: the smallest point of
    // the dense targets (n >= 2048), a few seconds.
    std::vector<int64_t> head_dims = {64};
    if (family.dense_sizes) head_dims = {32, 64, 128};
    else if (!quick && family.name != "window_w128_d2" && family.name != "longformer_w256_g2")
      head_dims.push_back(128);
    for (int64_t head_dim : head_dims) {
      const bool only_2048 = quick && head_dim != 64;
      // Serves is a property of the pattern kind, so a small instance decides it.
      const Pattern probe = materialize(family.spec(512, 0), {1, 1, 512, 512});
      for (const Kernel& kernel : kernels()) {
        // Exact kernels only: an approximation (Performer, ...) is not expected to meet the
        // oracle's tolerance, so validation-before-timing does not apply; its owner
        // benchmarks it against its own error bound.
        if (kernel.target == Target::cuda || !kernel.exact || !kernel.serves(probe)) continue;
        // A decode kernel (a KV cache read in place) is measured in bytes per second by
        // bench_decode, not on these self-attention problems in FLOPs.
        if (kernel.features & kKvCache) continue;
        const bool reference = kernel.target == Target::reference;
        if (reference && head_dim != 64) continue;
        const int64_t lo = only_2048 ? 2048 : 512;
        const std::string name =
            std::string(kernel.name) + "/" + family.name + "/D" + std::to_string(head_dim);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), run_kernel, &kernel, &family, head_dim);
        for (int64_t n : sizes(lo, reference ? max_ref_n : max_n)) b->Arg(n);
        b->ArgName("seq_len")
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(min_time)
            ->Complexity(benchmark::oAuto);
      }
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
  sparseattn::bench::g_peak = sparseattn::bench::measure_peak();
  benchmark::AddCustomContext("peak_fma_gflops", std::to_string(sparseattn::bench::g_peak.gflops));
  benchmark::AddCustomContext("peak_fma_cpu_gflops",
                              std::to_string(sparseattn::bench::g_peak.cpu_gflops));
  benchmark::AddCustomContext("peak_probe",
                              "start-up: best of 5 x 20M iterations (peak_fma_*); per benchmark: "
                              "best of 3 x 3M iterations right before its timed loop "
                              "(counters peak_gflops, peak_cpu_gflops)");
  benchmark::AddCustomContext("cpu_isa", sparseattn::cpu::isa_summary());
  // The bf16 entries' engine, fixed for the process (kernels_bf16.h), and the measured
  // vdpbf16ps / FMA FLOP rate ratio it was chosen by ("n/a" without AVX512-BF16).
  benchmark::AddCustomContext("bf16_engine", sparseattn::cpu::bf16_engine_summary());
  const std::optional<double> dot_vs_fma = sparseattn::cpu::bf16_engine_choice().dot_vs_fma;
  benchmark::AddCustomContext("bf16_dot_vs_fma",
                              dot_vs_fma ? std::to_string(*dot_vs_fma) : std::string("n/a"));
  benchmark::AddCustomContext("fma_probe_lanes", std::to_string(sparseattn::cpu::fma_probe_lanes()));
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("mode", quick ? "quick" : "full");
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  benchmark::AddCustomContext("OMP_WAIT_POLICY", wait_policy ? wait_policy : "(unset)");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  sparseattn::bench::register_all(quick);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (sparseattn::bench::g_errors > 0) {
    std::fprintf(stderr, "bench_cpu: %d benchmark(s) reported an error instead of a time\n",
                 sparseattn::bench::g_errors);
    return 1;
  }
  return 0;
}
