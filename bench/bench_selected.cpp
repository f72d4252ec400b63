// bench_selected: token-level selected attention on the CPU (contract §3.16), the figure
// docs/benchmarks.md "Selected attention" quotes: cpu_k08_selected_gather on DSA's shape —
// one causal list of K keys per query shared by every head (H_sel = 1) and one kv head
// (H_kv = 1, so the g = H_q query heads share each gathered row) — as GFLOP per CPU-second
// over the FLOPs the selection keeps (4 · nnz · head_dim, pattern/pattern.h), against this
// machine's FMA peak per CPU-second measured in the same run (api/peak_probe.h), with the
// bytes gathered; k08's bf16 twin (cpu_k08_selected_gather_bf16: q, k, v rounded to bfloat16
// inside the timed run, as every bf16 entry) and k06 (the layout walk) on the same pattern,
// as ratios to k08's CPU time within the run.
//
//   build/bench_selected [--n 16384] [--k 2048] [--heads 8] [--head-dim 64] [--repeats 3]
//                        [--no-bf16] [--no-k06] [--json FILE]
//
// The list of query i: keys 0..i when i < K (then -1), else K keys spread evenly over
// [0, i] (floor(t·(i+1)/K), t < K: distinct). Every kernel is checked against the oracle
// (sampled rows, api/oracle.h) before it is timed (contract §4.11). Exits 1 on a failure.
// --json FILE writes the printed figures (the shape, nnz, GFLOP kept, bytes gathered, the
// peak, and per kernel its CPU seconds per call, GFLOP per CPU-second, fraction of the peak
// and ratio to k08's CPU time) to FILE through a temporary name renamed into place (contract
// §5.4); bench_targets (bench/targets.h) reads it as the selected target's row.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "api/measure.h"
#include "api/oracle.h"
#include "api/peak_probe.h"
#include "core/npy.h"
#include "core/seeded_inputs.h"
#include "registry/registry.h"

namespace sparseattn::bench {
namespace {

int run(int argc, char** argv) {
  int64_t n = 16384, kk = 2048, heads = 8, d = 64, repeats = 3;
  bool k06 = true, bf16 = true;
  std::string json_path;
  for (int a = 1; a < argc; ++a) {
    const std::string f = argv[a];
    auto value = [&]() -> int64_t {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_selected: error: %s needs a value\n", f.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++a]);
    };
    if (f == "--n") n = value();
    else if (f == "--k") kk = value();
    else if (f == "--heads") heads = value();
    else if (f == "--head-dim") d = value();
    else if (f == "--repeats") repeats = value();
    else if (f == "--no-k06") k06 = false;
    else if (f == "--no-bf16") bf16 = false;
    else if (f == "--json") {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_selected: error: --json needs a value\n");
        return 2;
      }
      json_path = argv[++a];
    }
    else {
      std::fprintf(stderr, "bench_selected: error: unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  Tensor<int64_t> idx({1, 1, n, kk}, -1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = idx.ptr() + i * kk;
    if (i < kk)
      for (int64_t t = 0; t <= i; ++t) row[t] = t;
    else
      for (int64_t t = 0; t < kk; ++t) row[t] = t * (i + 1) / kk;
  }
  PatternSpec spec;
  spec.kind = PatternKind::selected;
  spec.kv_indices = std::move(idx);
  spec.causal = true;
  const Pattern pattern = materialize(spec, {1, heads, n, n});
  const PatternStats st = pattern_stats(pattern);
  const double flops = attention_flops(st, d, d);
  const Problem problem = make_problem(testing_inputs::random_tensor({1, heads, n, d}, 1),
                                       testing_inputs::random_tensor({1, 1, n, d}, 2),
                                       testing_inputs::random_tensor({1, 1, n, d}, 3), pattern, nullptr);
  const api::Oracle oracle = api::make_oracle(problem);
  const api::Peak peak = api::measure_peak();
  // One gather per (query, list): its keys' k and v rows, float32, for all `heads` heads.
  const double gathered = static_cast<double>(st.nnz / heads) * 2.0 * d * 4.0;
  std::printf("selected n=%lld K=%lld H_q=%lld H_kv=1 H_sel=1 d=%lld threads=%d: nnz %lld, "
              "%.2f GFLOP kept, %.1f MB gathered per call; FMA peak %.1f GFLOP/s per CPU-second\n",
              static_cast<long long>(n), static_cast<long long>(kk), static_cast<long long>(heads),
              static_cast<long long>(d), omp_get_max_threads(), static_cast<long long>(st.nnz),
              flops * 1e-9, gathered * 1e-6, peak.cpu_gflops);
  nlohmann::json kernels = nlohmann::json::array();
  double k08_cpu = 0.0;
  for (const char* name :
       {"cpu_k08_selected_gather", "cpu_k08_selected_gather_bf16", "cpu_k06_generic_tiles"}) {
    if (!k06 && std::strcmp(name, "cpu_k06_generic_tiles") == 0) continue;
    if (!bf16 && std::strcmp(name, "cpu_k08_selected_gather_bf16") == 0) continue;
    api::TimingPlan plan;
    plan.repeats = 1;
    plan.reuse_output = true;
    double cpu_s = 0.0;
    int calls = 0;
    const Kernel& kernel = find_kernel(name);
    plan.timed_section = [&] {
      Output out;
      for (int64_t r = 0; r < repeats; ++r) {
        const double c0 = api::process_cpu_seconds();
        kernel.run(problem, out);
        cpu_s += api::process_cpu_seconds() - c0;
        ++calls;
      }
    };
    const api::Measurement m = api::measure(kernel, problem, oracle, plan);
    if (!m.check.pass) {
      std::printf("%s: FAILED its check: %s\n", name, m.check.failure.c_str());
      return 1;
    }
    const double per_call = cpu_s / calls;
    const double rate = flops / per_call * 1e-9;
    if (k08_cpu == 0.0) k08_cpu = per_call;
    std::printf("%-29s %.3f CPU-s per call, %.1f GFLOP per CPU-second = %.0f%% of peak; "
                "%.2fx k08's CPU time (check: %.0f%% of the tolerance)\n",
                name, per_call, rate, 100.0 * rate / peak.cpu_gflops, per_call / k08_cpu,
                100.0 * m.check.budget_used());
    kernels.push_back({{"name", name},
                       {"cpu_s_per_call", per_call},
                       {"gflop_per_cpu_s", rate},
                       {"frac_peak", rate / peak.cpu_gflops},
                       {"cpu_time_vs_k08", per_call / k08_cpu},
                       {"check_budget_used", m.check.budget_used()}});
  }
  if (!json_path.empty()) {
    const nlohmann::json j{{"n", n},
                           {"k", kk},
                           {"num_heads", heads},
                           {"num_kv_heads", 1},
                           {"num_sel_heads", 1},
                           {"head_dim", d},
                           {"threads", omp_get_max_threads()},
                           {"repeats", repeats},
                           {"nnz", st.nnz},
                           {"gflop_kept", flops * 1e-9},
                           {"gathered_bytes", gathered},
                           {"peak_cpu_gflops", peak.cpu_gflops},
                           {"kernels", kernels}};
    try {
      write_text_atomic(json_path, j.dump(2) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_selected: error: cannot write --json = %s: %s\n",
                   json_path.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) { return sparseattn::bench::run(argc, argv); }
