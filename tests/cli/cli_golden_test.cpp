// Checks contract §4.1 and §7.3 through the golden test vectors (docs/golden.md): `sparseattn
// golden` regenerates byte-identical files, its manifest documents every case, and each
// case's o, lse, dq, dk, dv pass `sparseattn check` under the manifest's own pattern flags.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.h"

namespace sparseattn::testing_cli {
namespace {

class Golden : public CliTest {};

TEST_F(Golden, RegeneratesByteIdenticalAndEveryCasePassesCheck) {
  ASSERT_EQ(run("golden --out " + path("a")).exit_code, 0);
  ASSERT_EQ(run("golden --out " + path("b")).exit_code, 0);
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_ / "a")) names.insert(e.path().filename().string());
  std::set<std::string> names_b;
  for (const auto& e : fs::directory_iterator(dir_ / "b")) names_b.insert(e.path().filename().string());
  EXPECT_EQ(names, names_b);
  for (const std::string& n : names)
    EXPECT_EQ(slurp(path("a/" + n)), slurp(path("b/" + n))) << n << " differs between runs";

  const nlohmann::json m = nlohmann::json::parse(slurp(path("a/manifest.json")));
  EXPECT_EQ(m["version"], "sparseattn-golden-1");
  EXPECT_EQ(m["tolerance"]["float32"]["atol"], 2e-5);
  EXPECT_EQ(m["tolerance"]["float64"]["rtol"], 1e-12);
  std::set<std::string> kinds;
  bool seq_len_1 = false, lq_ne_lk = false, d_ne_dv = false, partial_block = false;
  int64_t fully_masked = 0;
  bool saw_hd5 = false;
  for (const nlohmann::json& c : m["cases"]) {
    const std::string flags = c["pattern_flags"];
    const size_t p = flags.find("--pattern ") + 10;
    kinds.insert(flags.substr(p, flags.find(' ', p) - p));
    const nlohmann::json& s = c["shape"];
    seq_len_1 |= s["seq_len_q"] == 1;
    lq_ne_lk |= s["seq_len_q"] != s["seq_len_k"];
    d_ne_dv |= s["head_dim"] != s["head_dim_v"];
    partial_block |= flags.find("--block-size 4") != std::string::npos &&
                     s["seq_len_q"].get<int64_t>() % 4 != 0;
    fully_masked += c["fully_masked_rows"].get<int64_t>();
    EXPECT_EQ(names.count(c["files"]["q"].get<std::string>()), 1u);
    // The manifest's flags, relative to the set's directory, judge the set's own outputs.
    std::string f = flags;
    for (const char* file : {"segment_ids.npy", "explicit_mask.npy", "key_padding.npy"}) {
      const size_t at = f.find(file);
      if (at != std::string::npos) f.replace(at, std::string(file).size(), path("a/" + std::string(file)));
    }
    auto file = [&](const char* what) { return path("a/" + c["files"][what].get<std::string>()); };
    // The manifest's scale is contract §2.1's 1/sqrt(head_dim) (head_dim, not head_dim_v),
    // and check is run with it, so a wrong field fails here rather than going unread.
    const double scale = c["scale"].get<double>();
    EXPECT_DOUBLE_EQ(scale, 1.0 / std::sqrt(s["head_dim"].get<double>())) << c["name"];
    if (c["name"] == "longformer_hd5_hdv3") {
      EXPECT_NEAR(scale, 0.4472135955, 1e-10);
      saw_hd5 = true;
    }
    char scale_text[32];
    std::snprintf(scale_text, sizeof scale_text, "%.17g", scale);
    const RunResult r = run("check --q " + file("q") + " --k " + file("k") + " --v " + file("v") +
                            " --candidate " + file("o") + " --candidate-lse " + file("lse") +
                            " --dout " + file("dout") + " --candidate-dq " + file("dq") +
                            " --candidate-dk " + file("dk") + " --candidate-dv " + file("dv") +
                            " --scale " + scale_text + " " + f);
    EXPECT_EQ(r.exit_code, 0) << c["name"] << ": " << r.out << r.err;
  }
  EXPECT_TRUE(saw_hd5) << "the head_dim != head_dim_v case must be in the set";
  EXPECT_EQ(kinds, (std::set<std::string>{"dense", "window", "longformer", "random", "bigbird",
                                          "bigbird-etc", "hierarchical", "explicit"}));
  EXPECT_TRUE(seq_len_1 && lq_ne_lk && d_ne_dv && partial_block);
  EXPECT_GE(fully_masked, 2 * 9 + 1);  // the fully padded batch and the empty explicit row
}

TEST_F(Golden, AnOutputThatIsAFileIsAnArgumentError) {
  std::ofstream(path("f")) << "x";
  const RunResult r = run("golden --out " + path("f"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
