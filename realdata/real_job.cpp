// The main job on real data; what each number means is in real_job.h.
#include "realdata/real_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>

#include <fmt/core.h>

#include "api/measure.h"
#include "core/error.h"
#include "pattern/pattern.h"
#include "reference/attention.h"
#include "registry/registry.h"

namespace sparseattn::realdata {

std::vector<NamedPattern> default_patterns() {
  std::vector<NamedPattern> list;
  PatternSpec dense;
  list.push_back({"dense", dense});

  PatternSpec w32;
  w32.kind = PatternKind::window;
  w32.window = 32;
  list.push_back({"window w=32", w32});

  PatternSpec w128 = w32;
  w128.window = 128;
  list.push_back({"window w=128", w128});

  // [CLS] (token 0) as the global token: what Longformer does for classification.
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = 64;
  lf.global = {0};
  list.push_back({"longformer w=64 +CLS", lf});

  // BigBird's base configuration (Zaheer et al. 2020, App. E: block 64, 3 random blocks).
  PatternSpec bb;
  bb.kind = PatternKind::bigbird;
  bb.block_size = 64;
  bb.num_random_blocks = 3;
  bb.seed = 0;
  list.push_back({"bigbird b=64 r=3", bb});
  return list;
}

double median(std::vector<double> x) {
  require(!x.empty(), "median input", "[]", "must not be empty");
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A kernel's o widened to float64 (float32 kernels write o32).
Tensor<double> output_o(const Kernel& k, const Output& out) {
  return k.dtype == DType::float64 ? out.o : tensor_cast<double>(out.o32);
}

struct VsDense {
  double max_abs = 0.0, rel = 0.0;
};
VsDense compare_to_dense(const Tensor<double>& o, const Tensor<double>& dense) {
  VsDense r;
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < o.data.size(); ++i) {
    const double d = o.data[i] - dense.data[i];
    r.max_abs = std::max(r.max_abs, std::abs(d));
    diff2 += d * d;
    ref2 += dense.data[i] * dense.data[i];
  }
  r.rel = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : 0.0;
  return r;
}

using api::first_heads;

// The harness's plan for every method, the oracle included: `repeats` runs into one
// Output, the checked first run among them once it has passed; the fastest is the time.
api::TimingPlan job_plan(int64_t repeats) {
  api::TimingPlan plan;
  plan.repeats = repeats;
  plan.time_checked_call = true;
  plan.reuse_output = true;
  plan.keep_output = true;
  return plan;
}

// Which registry kernels the job runs: exact ones of target reference or cpu, whose
// inputs the stored data represents exactly (float64/32 always; float16 too, because the
// stored tensors are float16 already, so the oracle on them is the oracle on the
// rounded inputs). bfloat16 is compared with the oracle on bf16-rounded inputs, one more
// O(n²) oracle run per pattern: skipped.
bool job_runs(const Kernel& k) {
  return k.exact && k.target != Target::cuda && k.dtype != DType::bfloat16 &&
         std::string(k.name) != "a1_dense_masked";
}

}  // namespace

JobResult run_real_job(const JobOptions& options) {
  require(options.repeats >= 1, "--repeats", options.repeats, "must be >= 1");
  require(options.dense_reference_heads >= 0, "--dense-reference-heads",
          options.dense_reference_heads, "must be >= 0 (0 = all heads)");
  require(!options.patterns.empty() && options.patterns.front().spec.kind == PatternKind::dense &&
              !options.patterns.front().spec.causal,
          "patterns", options.patterns.empty() ? "[]" : options.patterns.front().label,
          "the first pattern must be dense (non-causal): it is the baseline");
  const auto t_job = Clock::now();
  JobResult job;
  job.data = load_dataset(options.data_dir, options.load);
  const RealDataset& d = job.data;
  PatternSizes sizes;
  sizes.num_heads = d.num_heads;
  sizes.seq_len_q = sizes.seq_len_k = d.seq_len;

  for (const RealLayer& layer : d.layers) {
    Tensor<double> dense_o, dense_lse;
    std::map<std::string, double> dense_best;  // target -> fastest time on dense
    for (const NamedPattern& np : options.patterns) {
      const auto t_pattern = Clock::now();
      const Pattern pattern = materialize(np.spec, sizes);
      const Problem problem = make_problem(layer.q, layer.k, layer.v, pattern, &d.scale);
      const PatternStats stats = pattern_stats(pattern);
      PatternResult r;
      r.layer = layer.layer;
      r.label = np.label;
      r.description = describe(np.spec);
      r.nnz = stats.nnz;
      r.density = stats.density;
      r.flops = attention_flops(stats, d.head_dim, d.head_dim);

      // The oracle, timed like every other method (it is also a method of the ladder).
      const Kernel& oracle_kernel = find_kernel("a1_dense_masked");
      const api::OracleRun run = api::time_oracle(problem, job_plan(options.repeats));
      const api::Oracle& oracle = run.oracle;
      const double best = run.measurement.best();
      r.oracle_seconds = best;
      const bool is_dense = &np == &options.patterns.front();
      if (is_dense) {
        dense_o = oracle.o;
        dense_lse = oracle.lse;
      }
      // The head subset for the O(n²) reference steps on the dense pattern (see
      // JobOptions::dense_reference_heads): its own pattern and problem; the harness
      // checks it on the oracle's first heads.
      const int64_t subset_heads =
          is_dense && options.dense_reference_heads > 0
              ? std::min(options.dense_reference_heads, d.num_heads) : d.num_heads;
      PatternSizes subset_sizes = sizes;
      subset_sizes.num_heads = subset_heads;
      const Pattern subset_pattern = materialize(np.spec, subset_sizes);
      const Problem subset_problem =
          subset_heads == d.num_heads
              ? Problem{}
              : make_problem(first_heads(layer.q, subset_heads), first_heads(layer.k, subset_heads),
                             first_heads(layer.v, subset_heads), subset_pattern, &d.scale);
      const Tensor<double> subset_dense_o = first_heads(dense_o, subset_heads);

      // Mass kept per head: exp(lse_A − lse_dense) = Σ_{j∈A(i)} P_ij, averaged over rows.
      const int64_t H = d.num_heads, n = d.seq_len;
      for (int64_t h = 0; h < H; ++h) {
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i)
          sum += std::exp(oracle.lse.data[h * n + i] - dense_lse.data[h * n + i]);
        r.mass_kept.push_back(sum / static_cast<double>(n));
      }
      r.mass_min = *std::min_element(r.mass_kept.begin(), r.mass_kept.end());
      r.mass_max = *std::max_element(r.mass_kept.begin(), r.mass_kept.end());
      r.mass_median = median(r.mass_kept);
      const VsDense od = compare_to_dense(oracle.o, dense_o);
      r.max_abs_vs_dense = od.max_abs;
      r.rel_vs_dense = od.rel;

      // The oracle itself is listed as a method (error 0 by definition) so that the
      // error-vs-compute chart and the speedup column include it.
      std::vector<std::pair<const Kernel*, Output>> runs;
      MethodResult self;
      self.kernel = oracle_kernel.name;
      self.target = target_name(oracle_kernel.target);
      self.dtype = dtype_name(oracle_kernel.dtype);
      self.atol = oracle_kernel.atol;
      self.rtol = oracle_kernel.rtol;
      self.pass = true;
      self.max_abs_vs_dense = od.max_abs;
      self.rel_vs_dense = od.rel;
      self.heads_run = d.num_heads;
      self.seconds = best;
      r.methods.push_back(self);

      for (const Kernel& k : kernels()) {
        if (!job_runs(k) || !k.serves(pattern)) continue;
        MethodResult m;
        m.kernel = k.name;
        m.target = target_name(k.target);
        m.dtype = dtype_name(k.dtype);
        m.atol = k.atol;
        m.rtol = k.rtol;
        const bool subset = k.target == Target::reference && subset_heads < d.num_heads;
        m.heads_run = subset ? subset_heads : d.num_heads;
        const api::Measurement run_k =
            api::measure(k, subset ? subset_problem : problem, oracle, job_plan(options.repeats));
        m.seconds = run_k.best();  // NaN when it failed its check: not timed
        const Tensor<double> o = output_o(k, run_k.output);
        m.pass = run_k.check.pass;
        m.failure = run_k.check.failure;
        m.max_abs_error = run_k.check.o.max_abs_error;
        m.budget_used = run_k.check.budget_used();
        const VsDense vd = compare_to_dense(o, subset ? subset_dense_o : dense_o);
        m.max_abs_vs_dense = vd.max_abs;
        m.rel_vs_dense = vd.rel;
        job.all_pass = job.all_pass && m.pass;
        r.methods.push_back(m);
      }

      // Per-head times, so that a method run on a head subset compares fairly.
      auto per_head = [](const MethodResult& m) { return m.seconds / static_cast<double>(m.heads_run); };
      if (is_dense)
        for (const MethodResult& m : r.methods)
          dense_best[m.target] = std::min(
              dense_best.count(m.target) ? dense_best[m.target] : per_head(m), per_head(m));
      MethodResult* fastest = nullptr;
      for (MethodResult& m : r.methods) {
        if (dense_best.count(m.target)) m.speedup_vs_dense = dense_best[m.target] / per_head(m);
        if (m.target == "cpu" && (!fastest || m.seconds < fastest->seconds)) fastest = &m;
      }
      if (fastest) fastest->fastest_optimized = true;

      if (options.verbose)
        std::cerr << fmt::format(
            "demo-real: layer {} {:<22} density {:.4f}  mass kept {:.3f}/{:.3f}/{:.3f}  "
            "rel err vs dense {:.3e}  {} methods  {:.1f} s\n",
            layer.layer, np.label, r.density, r.mass_min, r.mass_median, r.mass_max,
            r.rel_vs_dense, r.methods.size(), seconds_since(t_pattern));
      job.results.push_back(std::move(r));
    }
  }
  job.total_seconds = seconds_since(t_job);
  return job;
}

}  // namespace sparseattn::realdata
