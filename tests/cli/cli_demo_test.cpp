// Checks contract §4.7 (registered kernels pass at their tolerance) and §5.3, through `demo`.
// `sparseattn demo` at a small, awkward size (seq_len 67: a partial block; head_dim 7):
// every registry kernel that serves a demo pattern appears in its JSON, each exact one
// passes its own tolerance, and the exit status says so.
#include <nlohmann/json.hpp>
#include <set>

#include "cli/demo_patterns.h"
#include "cli_harness.h"
#include "registry/registry.h"

namespace sparseattn::testing_cli {
namespace {

class Demo : public CliTest {};

TEST_F(Demo, SmallRunListsEveryServingKernelAndAllExactOnesPass) {
  const RunResult r = run("demo --seq-len 67 --num-heads 2 --head-dim 7 --reference-heads 2 "
                          "--json " + path("demo.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("demo.json")));
  EXPECT_EQ(j["pass"], true);
  EXPECT_EQ(j["seq_len"], 67);
  std::set<std::string> patterns;
  for (const auto& row : j["rows"]) {
    SCOPED_TRACE(row.dump());
    patterns.insert(row["pattern"].get<std::string>());
    const std::string status = row["status"];
    EXPECT_TRUE(status == "pass" || status == "approx" || status == "skipped");
    if (status == "pass") {
      EXPECT_LE(row["budget_used"].get<double>(), 1.0);
    }
  }
  // Every (pattern, kernel) pair the registry says is served must have its row: the
  // registry and cli/demo_patterns.cpp decide, not a list copied here.
  std::set<std::pair<std::string, std::string>> rows;
  for (const auto& row : j["rows"])
    rows.insert({row["pattern"].get<std::string>(), row["variant"].get<std::string>()});
  for (const cli::DemoPattern& dp : cli::demo_patterns(67, 0)) {
    EXPECT_TRUE(patterns.count(dp.label)) << dp.label;
    const Pattern p = materialize(dp.spec, PatternSizes{1, 2, 67, 67});
    for (const Kernel& k : kernels()) {
      if (k.serves(p)) {
        EXPECT_TRUE(rows.count({dp.label, k.name})) << dp.label << " " << k.name;
      }
    }
  }
  EXPECT_TRUE(rows.count({"dense", "a0_dense"}));
}

// The demo's patterns scale with --seq-len: published sizes from 4096 up, sparse below.
TEST(DemoPatterns, ScaleWithSeqLenAndKeepThePublishedValuesFrom4096Up) {
  for (int64_t n : {4096, 8192}) {
    const std::vector<cli::DemoPattern> d = cli::demo_patterns(n, 0);
    EXPECT_EQ(d[1].spec.window, 256);
    EXPECT_EQ(d[2].spec.block_size, 64);
    EXPECT_EQ(d[3].spec.window, 128);
    EXPECT_EQ(d[4].spec.window, 32);
    EXPECT_EQ(d[4].spec.num_random, 64);
  }
  for (int64_t n : {64, 256, 1024}) {
    for (const cli::DemoPattern& dp : cli::demo_patterns(n, 0)) {
      if (dp.label == "dense") continue;
      const double density = pattern_stats(materialize(dp.spec, PatternSizes{1, 1, n, n})).density;
      EXPECT_LT(density, 0.5) << dp.label << " at seq_len " << n;
      EXPECT_GT(density, 0.0) << dp.label << " at seq_len " << n;
    }
  }
}

TEST_F(Demo, BadSizesAreRejected) {
  const RunResult r = run("demo --seq-len 16 --num-heads 2 --reference-heads 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("sparseattn: error: invalid --reference-heads", 0), 0u) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
