// Checks contract §4.7 and §2.5 (the real-data report: every figure recomputed).
// The main job (realdata/real_job.h) on a 512-token slice of the stored real data: every
// figure it reports is recomputed here from the float64 oracle (a1_dense_masked), the
// locality analysis and the kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "core/error.h"
#include "realdata/locality.h"
#include "realdata/real_job.h"
#include "realdata/report.h"
#include "reference/attention.h"
#include "registry/registry.h"

namespace sparseattn::realdata {
namespace {

namespace fs = std::filesystem;

JobOptions slice_options(int64_t seq_len) {
  JobOptions o;
  o.data_dir = SPARSEATTN_DATA_DIR;
  o.load.seq_len = seq_len;
  o.figures = false;
  o.verbose = false;
  return o;
}

// One run shared by the tests below (it is the expensive part).
const JobResult& slice_job() {
  static const JobResult job = run_real_job(slice_options(512));
  return job;
}

// x[:, :heads] of a [1, H, n, D] tensor.
Tensor<double> first_heads(const Tensor<double>& x, int64_t heads) {
  Tensor<double> y({1, heads, x.dim(2), x.dim(3)});
  std::copy_n(x.ptr(), y.numel(), y.ptr());
  return y;
}

Pattern pattern_for(const PatternSpec& spec, const RealDataset& d) {
  PatternSizes sizes;
  sizes.num_heads = d.num_heads;
  sizes.seq_len_q = sizes.seq_len_k = d.seq_len;
  return materialize(spec, sizes);
}

TEST(RealJob, CoversEveryLayerPatternAndReferenceStep) {
  const JobResult& job = slice_job();
  const auto patterns = default_patterns();
  ASSERT_EQ(job.results.size(), 2 * patterns.size());
  EXPECT_TRUE(job.all_pass);
  for (size_t r = 0; r < job.results.size(); ++r) {
    const PatternResult& res = job.results[r];
    const NamedPattern& np = patterns[r % patterns.size()];
    EXPECT_EQ(res.label, np.label);
    EXPECT_EQ(res.layer, r < patterns.size() ? 0 : 5);
    const Pattern pattern = pattern_for(np.spec, job.data);
    std::set<std::string> ran;
    for (const MethodResult& m : res.methods) ran.insert(m.kernel);
    // Every exact reference step that serves the pattern ran (a1 is the oracle row).
    for (const Kernel& k : kernels()) {
      if (k.target == Target::reference && k.exact && k.serves(pattern)) {
        EXPECT_TRUE(ran.count(k.name)) << k.name << " missing on " << np.label;
      }
    }
    for (const MethodResult& m : res.methods) {
      EXPECT_TRUE(m.pass) << m.kernel << " on " << np.label << ": " << m.failure;
      EXPECT_LE(m.budget_used, 1.0);
      EXPECT_GT(m.seconds, 0.0);
      const bool subset_allowed = res.label == "dense" && m.target == "reference" &&
                                  m.kernel != "a1_dense_masked";
      EXPECT_EQ(m.heads_run, subset_allowed ? 2 : 12) << m.kernel << " on " << np.label;
    }
  }
}

// Mass kept and the sparse-vs-dense error, recomputed: the locality analysis's dense
// softmax mass (another code path) and the oracle's outputs on both patterns.
TEST(RealJob, MassKeptAndErrorVsDenseMatchTheOracle) {
  const JobResult& job = slice_job();
  const auto patterns = default_patterns();
  const RealDataset& d = job.data;
  for (size_t l = 0; l < d.layers.size(); ++l) {
    const RealLayer& layer = d.layers[l];
    const Pattern dense = pattern_for(patterns[0].spec, d);
    const AttentionResult full = a1_dense_masked(layer.q, layer.k, layer.v, dense, &d.scale);
    for (size_t p = 0; p < patterns.size(); ++p) {
      const PatternResult& res = job.results[l * patterns.size() + p];
      const Pattern pattern = pattern_for(patterns[p].spec, d);
      const auto heads = analyze_locality(layer.q, layer.k, pattern, {}, &d.scale);
      ASSERT_EQ(res.mass_kept.size(), heads.size());
      for (size_t h = 0; h < heads.size(); ++h)
        EXPECT_NEAR(res.mass_kept[h], heads[h].pattern_mass, 1e-12)
            << "layer " << layer.layer << " " << res.label << " head " << h;
      if (p == 0) {
        for (double m : res.mass_kept) EXPECT_NEAR(m, 1.0, 1e-12);
        EXPECT_EQ(res.rel_vs_dense, 0.0);
      }
      const AttentionResult a = a1_dense_masked(layer.q, layer.k, layer.v, pattern, &d.scale);
      double max_abs = 0.0, diff2 = 0.0, ref2 = 0.0;
      for (size_t i = 0; i < a.o.data.size(); ++i) {
        const double e = a.o.data[i] - full.o.data[i];
        max_abs = std::max(max_abs, std::abs(e));
        diff2 += e * e;
        ref2 += full.o.data[i] * full.o.data[i];
      }
      EXPECT_NEAR(res.max_abs_vs_dense, max_abs, 1e-14) << res.label;
      EXPECT_NEAR(res.rel_vs_dense, std::sqrt(diff2 / ref2), 1e-14) << res.label;
      EXPECT_EQ(res.density, static_cast<double>(pattern_stats(pattern).nnz) /
                                 (d.num_heads * d.seq_len * d.seq_len));
    }
  }
}

// Each method's reported max error against the oracle, recomputed by running it again.
TEST(RealJob, ReportedMethodErrorsMatchARerunAgainstTheOracle) {
  const JobResult& job = slice_job();
  const auto patterns = default_patterns();
  const RealDataset& d = job.data;
  const RealLayer& layer = d.layers[1];  // the last layer: the least local one
  for (size_t p = 0; p < patterns.size(); ++p) {
    const PatternResult& res = job.results[patterns.size() + p];
    for (const MethodResult& m : res.methods) {
      if (m.kernel == "a1_dense_masked") continue;
      // A method may have run on the first heads_run heads only (dense pattern).
      const RealLayer sub{layer.layer, first_heads(layer.q, m.heads_run),
                          first_heads(layer.k, m.heads_run), first_heads(layer.v, m.heads_run)};
      PatternSizes sizes;
      sizes.num_heads = m.heads_run;
      sizes.seq_len_q = sizes.seq_len_k = d.seq_len;
      const Pattern pattern = materialize(patterns[p].spec, sizes);
      const AttentionResult oracle = a1_dense_masked(sub.q, sub.k, sub.v, pattern, &d.scale);
      const Problem problem = make_problem(sub.q, sub.k, sub.v, pattern, &d.scale);
      const Kernel& k = find_kernel(m.kernel);
      Output out;
      k.run(problem, out);
      const Tensor<double> o = k.dtype == DType::float64 ? out.o : tensor_cast<double>(out.o32);
      double max_abs = 0.0;
      for (size_t i = 0; i < o.data.size(); ++i)
        max_abs = std::max(max_abs, std::abs(o.data[i] - oracle.o.data[i]));
      EXPECT_NEAR(m.max_abs_error, max_abs, 1e-15) << m.kernel << " on " << res.label;
    }
  }
}

TEST(RealJob, WritesTheReportWithFigures) {
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot not installed: figures are skipped by design";
  JobOptions o = slice_options(128);
  o.load.layers = {0};
  o.figures = true;
  o.out_dir = (fs::temp_directory_path() / ("sparseattn_real_report_" + std::to_string(::getpid())))
                  .string();
  const JobResult job = run_real_job(o);
  const std::string report = write_report(job, o);
  std::ifstream in(report);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const NamedPattern& np : default_patterns())
    EXPECT_NE(text.find(np.label), std::string::npos) << np.label;
  for (const char* png : {"real_heatmap.png", "real_mass_kept.png", "real_error_vs_time.png"}) {
    std::ifstream f(o.out_dir + "/" + png, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
  }
  EXPECT_TRUE(fs::exists(o.out_dir + "/results.json"));
  fs::remove_all(o.out_dir);
}

TEST(RealJob, BadOptionsNameTheArgument) {
  JobOptions o = slice_options(64);
  o.repeats = 0;
  EXPECT_THROW(run_real_job(o), InvalidArgument);
  o = slice_options(64);
  o.patterns.erase(o.patterns.begin());  // first pattern no longer dense
  try {
    run_real_job(o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "patterns");
  }
}

}  // namespace
}  // namespace sparseattn::realdata
