// bench_cuda — the CUDA ladder on the shapes of the CUDA targets (docs/cuda.md; Google
// Benchmark, manual time).
//
//   build/bench_cuda --benchmark_out=cuda.json --benchmark_out_format=json
//   build/bench_cuda --benchmark_filter='bigbird.*bf16'
//
// Shapes: batch 1, 16 heads, head_dim 64 and 128, seq_len 4096 ... 65536;
// dense, window (one-sided 256 and 1024) and BigBird (block 64, 3 random blocks): the
// entries of the one family list (api/families.h) that name CUDA kernels. The float32
// and naive kernels stop at the sizes noted there: their time would eat the gpu-check
// budget without telling anything new.
//
// Honest timing (only validated code is timed, the harness api/measure.h): a kernel is
// timed only after it matched the float64 oracle (on its rounded inputs for fp16/bf16)
// on the same pattern kind at a small size (its registry tolerance), and after a
// poisoned run at the benchmark size left no NaN/Inf in o or lse. Inputs are generated
// on the device and uploaded once. The launch is configured (shared-memory opt-in,
// device attribute queries: configure_shared_memory does them once) by the two warm-up
// launches, outside the timed window; each iteration then times N back-to-back launches
// between two CUDA events (UseManualTime, time per launch = elapsed / N), N chosen from
// the warm-up so that one timing spans about 5 ms (1 <= N <= 100; counter
// "launches_per_timing"). Counters: TFLOPs over the FLOPs the pattern actually needs
// (4 * nnz * head_dim, attention_flops), dense-equivalent TFLOPs, density.
//
// --split-cap=N: the block-sparse kernels' split-K cap (packed_pattern.h: plan_schedule;
// 0, the default, plans automatically; a large N turns splitting off), to compare.
// --jsonl=PATH (before Google Benchmark's own flags): one JSON object per finished case,
// written and flushed as the case ends — {"name", "ms", "TFLOPs", "error_occurred",
// "error_message", counters...} — so a run killed at its timeout keeps every finished case
// (scripts/gpu_check.sh; tools/gpu_report.py reads it).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/families.h"
#include "api/measure.h"
#include "core/check.h"
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/device_runtime.h"
#include "optimized/cuda/launchers.h"
#include "optimized/cuda/packed_pattern.h"
#include "pattern/prng.h"
#include "registry/registry.h"

namespace sparseattn {
namespace {

constexpr int64_t kBatch = 1;
constexpr int64_t kHeads = 16;
const int64_t kHeadDims[] = {64, 128};
const int64_t kSeqLens[] = {4096, 8192, 16384, 32768, 65536};
constexpr int64_t kTargetSeqLen = 32768;  // the CUDA targets' size (docs/cuda.md)

// Patterns are materialized once per (family, seq_len) and shared by its kernels.
const Pattern& pattern_for(const api::Family& f, int64_t n) {
  static std::map<std::pair<std::string, int64_t>, std::unique_ptr<Pattern>> cache;
  auto& slot = cache[{f.name, n}];
  if (!slot) slot = std::make_unique<Pattern>(materialize(f.spec(n, 0), PatternSizes{kBatch, kHeads, n, n}));
  return *slot;
}

// The check's problem: the family's pattern at a small, awkward size (not a multiple of
// any block), 2 heads, seeded uniform inputs in [-1, 1); and its float64 oracle (the
// harness rounds the inputs for a half-precision kernel). Built once per (family, head_dim).
struct CheckCase {
  std::unique_ptr<Pattern> pattern;
  Problem problem;
  api::Oracle oracle;
};
const CheckCase& check_case(const api::Family& f, int64_t head_dim) {
  static std::map<std::pair<std::string, int64_t>, std::unique_ptr<CheckCase>> cache;
  auto& slot = cache[{f.name, head_dim}];
  if (slot) return *slot;
  const int64_t n = 1000;
  slot = std::make_unique<CheckCase>();
  slot->pattern = std::make_unique<Pattern>(materialize(f.spec(n, 0), PatternSizes{1, 2, n, n}));
  Tensor<double> q({1, 2, n, head_dim}), k({1, 2, n, head_dim}), v({1, 2, n, head_dim});
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (Tensor<double>* t : {&q, &k, &v})
    for (double& x : t->data) {
      state = splitmix64_mix(state);
      x = static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0;
    }
  slot->problem = make_problem(q, k, v, *slot->pattern, nullptr);
  slot->oracle = api::make_oracle(slot->problem);
  return *slot;
}

bool all_finite(const cuda::DeviceProblem& d) {
  Output out;
  cuda::download_outputs(d, out);
  for (float x : out.o32.data)
    if (!std::isfinite(x)) return false;
  for (float x : out.lse32.data)
    if (std::isnan(x) || x == INFINITY) return false;  // -inf is a fully masked row
  return true;
}

// Back-to-back launches per timed window: about 5 ms of work, at least 1, at most 100.
int launches_per_timing(float one_launch_ms) {
  if (!(one_launch_ms > 0.f)) return 1;
  return static_cast<int>(std::min(100.0, std::max(1.0, std::ceil(5.0 / one_launch_ms))));
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

// The console output as usual, plus one flushed JSON line per finished case.
class JsonLinesReporter : public benchmark::ConsoleReporter {
 public:
  explicit JsonLinesReporter(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) std::fprintf(stderr, "bench_cuda: cannot open --jsonl %s\n", path.c_str());
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      out_ << "{\"name\": \"" << json_escape(r.benchmark_name()) << "\"";
      if (r.error_occurred) {
        out_ << ", \"error_occurred\": true, \"error_message\": \"" << json_escape(r.error_message) << "\"";
      } else {
        out_ << ", \"ms\": " << r.GetAdjustedRealTime() * 1e3 / benchmark::GetTimeUnitMultiplier(r.time_unit)
             << ", \"iterations\": " << r.iterations;
        for (const auto& c : r.counters)
          if (std::isfinite(c.second.value)) out_ << ", \"" << json_escape(c.first) << "\": " << c.second.value;
      }
      out_ << ", \"label\": \"" << json_escape(r.report_label) << "\"}\n";
      out_.flush();
    }
  }

 private:
  std::ofstream out_;
};

// The kernel's time at the benchmark size, once the harness's check has passed: the
// poisoned run must leave no NaN/Inf, then the timed launches.
void time_on_device(benchmark::State& state, const Kernel* kernel, const api::Family* family,
                    int64_t n, int64_t head_dim) {
  const Pattern& pattern = pattern_for(*family, n);
  const cuda::CudaLauncher& launcher = cuda::find_launcher(kernel->name);
  cuda::DeviceProblem d = cuda::random_device_problem(pattern, kBatch, head_dim, head_dim, launcher.dtype, 2026);
  d.poison_outputs();
  launcher.launch(d, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!all_finite(d)) {
    state.SkipWithError("NaN/Inf in the output at the benchmark size (a row left unwritten?)");
    return;
  }
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  // Second warm-up, timed once to choose N (the launch is configured by now).
  CUDA_CHECK(cudaEventRecord(start));
  launcher.launch(d, nullptr);
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float warm_ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&warm_ms, start, stop));
  const int launches = launches_per_timing(warm_ms);
  for (auto _ : state) {
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < launches; ++r) launcher.launch(d, nullptr);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3 / launches);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  state.counters["launches_per_timing"] = launches;

  const PatternStats stats = pattern_stats(pattern);
  const double flops = kBatch * attention_flops(stats, head_dim, head_dim);
  const double dense_flops = 4.0 * kBatch * kHeads * static_cast<double>(n) * n * head_dim;
  using C = benchmark::Counter;
  state.counters["TFLOPs"] = C(flops * 1e-12, C::kIsIterationInvariantRate);
  state.counters["dense_equiv_TFLOPs"] = C(dense_flops * 1e-12, C::kIsIterationInvariantRate);
  state.counters["density"] = stats.density;
  state.counters["nnz"] = static_cast<double>(stats.nnz);
  state.counters["seq_len"] = static_cast<double>(n);
  state.counters["head_dim"] = static_cast<double>(head_dim);
  state.SetLabel(describe(family->spec(n, 0)) + " " + dtype_name(kernel->dtype));
}

// The harness (api/measure.h): the kernel against the float64 oracle on the family's
// check case at its registry tolerance first; the device timing only when it passed.
void run_benchmark(benchmark::State& state, const Kernel* kernel, const api::Family* family, int64_t n,
                   int64_t head_dim) {
  try {
    const CheckCase& c = check_case(*family, head_dim);
    api::TimingPlan plan;
    plan.timed_section = [&] { time_on_device(state, kernel, family, n, head_dim); };
    const api::Measurement m = api::measure(*kernel, c.problem, c.oracle, plan);
    if (!m.timed) {
      const Tolerance tol{kernel->atol, kernel->rtol};
      std::string verdict;
      if (!m.check.o.pass) verdict = report_json(m.check.o, "o", tol);
      if (!m.check.lse.pass) verdict += report_json(m.check.lse, "lse", tol);
      state.SkipWithError(("failed validation against a1_dense_masked: " + verdict).c_str());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace
}  // namespace sparseattn

int main(int argc, char** argv) {
  using namespace sparseattn;
  std::string why;
  if (!cuda::device_available(&why)) {
    std::fprintf(stderr, "bench_cuda: no CUDA device (%s): nothing to time\n", why.c_str());
    return 2;
  }
  // Registered (and so run) in priority order: the targets' seq_len 32768 first, every
  // family and kernel, then the rest of the sweep; a run cut at its timeout loses the
  // least important cases.
  for (const bool targets : {true, false})
    for (const api::Family& f : api::families())
      for (const api::CudaCase& limit : f.cuda) {
        const Kernel& kernel = find_kernel(limit.kernel);
        for (int64_t d : kHeadDims)
          for (int64_t n : kSeqLens) {
            if (n > limit.max_seq_len || d > limit.max_head_dim || (n == kTargetSeqLen) != targets) continue;
            const std::string name = f.name + "/" + kernel.name + "/D" + std::to_string(d) + "/n" + std::to_string(n);
            benchmark::RegisterBenchmark(name.c_str(), run_benchmark, &kernel, &f, n, d)
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond)
                ->MinTime(0.1);
          }
      }
  // --jsonl=PATH and --split-cap=N are ours: taken out before Google Benchmark reads the flags.
  std::string jsonl;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--jsonl=", 8) == 0) {
      jsonl = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--split-cap=", 12) == 0) {
      char* end = nullptr;
      const long long cap = std::strtoll(argv[i] + 12, &end, 10);
      if (end == argv[i] + 12 || *end != '\0' || cap < 0) {
        std::fprintf(stderr, "bench_cuda: invalid --split-cap = %s: must be 0 (automatic) or a number of key tiles >= 1\n",
                     argv[i] + 12);
        return 2;
      }
      cuda::set_split_cap(cap);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (jsonl.empty()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    JsonLinesReporter reporter(jsonl);
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
  benchmark::Shutdown();
  return 0;
}
