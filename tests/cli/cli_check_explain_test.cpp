// Checks contract §4.9 (a check report that locates and explains a failure) and §1.6 (the
// convention flags): each wrong candidate fails naming its cause and its failing rows, and
// passes under the matching convention flag where one exists. Candidates come from the
// tests' own attention (cli_harness.h), not the library's oracle.
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class CheckExplain : public CliTest {
 protected:
  // B x H x 40 x 8 inputs; pattern longformer --window 3 --global 0.
  void SetUp() override {
    CliTest::SetUp();
    write_inputs(Dims{1, 2, 40, 40, 8, 8});
  }
  void write_inputs(const Dims& d) {
    d_ = d;
    q_ = uniform_tensor({d.B, d.H, d.Lq, d.D}, 1);
    k_ = uniform_tensor({d.B, d.H, d.Lk, d.D}, 2);
    v_ = uniform_tensor({d.B, d.H, d.Lk, d.Dv}, 3);
    write_npy(path("q.npy"), q_);
    write_npy(path("k.npy"), k_);
    write_npy(path("v.npy"), v_);
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  }
  static bool longformer(int64_t i, int64_t j, int64_t w) {
    return std::abs(i - j) <= w || i == 0 || j == 0;
  }
  // Writes o (and lse) of the tests' attention under `allowed` and `scale`.
  void candidate(const Allowed& allowed, double scale, std::vector<double>* lse_out = nullptr) {
    std::vector<double> o, lse;
    independent_attention(q_, k_, v_, d_, scale, allowed, o, lse);
    o_ = Tensor<double>({d_.B, d_.H, d_.Lq, d_.Dv});
    o_.data = o;
    lse_ = Tensor<double>({d_.B, d_.H, d_.Lq});
    lse_.data = lse;
    write_npy(path("o.npy"), o_);
    write_npy(path("lse.npy"), lse_);
    if (lse_out) *lse_out = lse;
  }
  nlohmann::json check(const std::string& extra, int want_exit) {
    const RunResult r = run("check " + qkv() + " --candidate " + path("o.npy") + " " + extra);
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    if (want_exit == 1) EXPECT_NE(r.err.find("probable cause:"), std::string::npos) << r.err;
    return r.out.empty() ? nlohmann::json() : nlohmann::json::parse(r.out);
  }
  const std::string pattern_ = " --pattern longformer --window 3 --global 0";
  const double sd_ = 1.0 / std::sqrt(8.0);
  Dims d_{};
  Tensor<double> q_, k_, v_, o_, lse_;
};

TEST_F(CheckExplain, ScaleOneOverHeadDimIsNamedAndPassesWithThatScale) {
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return longformer(i, j, 3); }, 1.0 / 8);
  const nlohmann::json j = check(pattern_, 1);
  EXPECT_EQ(j["probable_cause"], "scale 1/head_dim (candidate matches the oracle with --scale 0.125)");
  EXPECT_EQ(j["o"]["rows"]["0,0"], "0-39");
  EXPECT_EQ(j["o"]["rows"]["0,1"], "0-39");
  EXPECT_EQ(j["o"]["mismatches"]["0,0"], 320);
  EXPECT_GT(j["o"]["error_over_tolerance"].get<double>(), 1.0);
  EXPECT_TRUE(j["o"].contains("error_over_tolerance_means"));
  check(pattern_ + " --scale 0.125", 0);
}

TEST_F(CheckExplain, WindowOneNarrowerNamesTheRowsThatDiffer) {
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return longformer(i, j, 2); }, sd_);
  const nlohmann::json j = check(pattern_, 1);
  EXPECT_EQ(j["probable_cause"], "window one narrower (candidate matches --window 2)");
  EXPECT_EQ(j["o"]["rows"]["0,0"], "1-39");  // row 0 is global: the same either way
  const nlohmann::json& w = j["o"]["worst_row"];
  // The worst row's allowed keys, as ranges: global key 0 and the band i-3 .. i+3.
  const int64_t i = w["row"].get<int64_t>();
  ASSERT_GE(i, 4);
  ASSERT_LE(i, 36);
  EXPECT_EQ(w["allowed_keys"], "0," + std::to_string(i - 3) + "-" + std::to_string(i + 3));
  EXPECT_EQ(w["num_allowed_keys"], 8);
  EXPECT_EQ(w["fully_masked"], false);
  EXPECT_EQ(w["expected"].size(), 8u);
  check(" --pattern longformer --window 2 --global 0", 0);
}

TEST_F(CheckExplain, GlobalRowComputedAsWindowRow) {
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return std::abs(i - j) <= 3 || j == 0;  // row 0 not global
  }, sd_);
  const nlohmann::json j = check(pattern_, 1);
  EXPECT_EQ(j["probable_cause"],
            "global rows computed as window rows (query rows 0 must attend to every key)");
  EXPECT_EQ(j["o"]["rows"]["0,0"], "0");
  EXPECT_EQ(j["o"]["rows"]["0,1"], "0");
  EXPECT_EQ(j["o"]["worst_row"]["allowed_keys"], "0-39");
}

TEST_F(CheckExplain, NanOnAFullyPaddedBatchRowIsNamedFirstAsAString) {
  write_inputs(Dims{2, 2, 40, 40, 8, 8});
  Tensor<uint8_t> pad({2, 40}, 1);
  for (int64_t j = 0; j < 40; ++j) pad.data[40 + j] = 0;  // batch 1: all padding
  write_npy(path("pad.npy"), pad, true);
  candidate([](int64_t b, int64_t, int64_t i, int64_t j) { return b == 0 && longformer(i, j, 3); },
            sd_);
  for (int64_t e = o_.numel() / 2; e < o_.numel(); ++e) o_.data[e] = NAN;  // 0/0
  write_npy(path("o.npy"), o_);
  const nlohmann::json j =
      check(pattern_ + " --key-padding-mask " + path("pad.npy") + " --candidate-lse " +
                path("lse.npy"), 1);
  EXPECT_NE(j["probable_cause"].get<std::string>().find("NaN/Inf on fully masked rows"),
            std::string::npos);
  EXPECT_EQ(j["o"]["first_nonfinite"]["candidate"], "nan");
  EXPECT_EQ(j["o"]["first_nonfinite"]["expected"], 0.0);
  EXPECT_EQ(j["o"]["first_nonfinite"]["index"], nlohmann::json({1, 0, 0, 0}));
  EXPECT_EQ(j["o"]["worst_candidate"], "nan");
  EXPECT_EQ(j["o"]["error_over_tolerance"], "inf");
  EXPECT_EQ(j["o"]["rows"]["1,0"], "0-39");
  EXPECT_EQ(j["o"]["rows"]["1,1"], "0-39");
  EXPECT_FALSE(j["o"]["rows"].contains("0,0"));
  EXPECT_EQ(j["o"]["worst_row"]["fully_masked"], true);
  EXPECT_EQ(j["o"]["worst_row"]["padded_query"], true);
  EXPECT_EQ(j["o"]["worst_row"]["allowed_keys"], "");
  EXPECT_EQ(j["lse"]["pass"], true);  // -inf = -inf
}

TEST_F(CheckExplain, LseInBaseTwoIsNamedAndPassesWithLseBase2) {
  std::vector<double> lse;
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return longformer(i, j, 3); }, sd_, &lse);
  for (double& x : lse_.data) x /= std::log(2.0);
  write_npy(path("lse.npy"), lse_);
  const std::string lse_flag = " --candidate-lse " + path("lse.npy");
  const nlohmann::json j = check(pattern_ + lse_flag, 1);
  EXPECT_EQ(j["probable_cause"],
            "lse in base 2 (candidate's lse = oracle lse / ln 2; pass --lse-base 2)");
  EXPECT_EQ(j["o"]["pass"], true);
  EXPECT_EQ(j["lse"]["rows"]["0,1"], "0-39");
  check(pattern_ + lse_flag + " --lse-base 2", 0);
}

TEST_F(CheckExplain, TransposedLayoutIsNamedAndPassesWithLayoutBshd) {
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return longformer(i, j, 3); }, sd_);
  // Every tensor written [batch, seq_len, num_heads, d], as FlashAttention stores it.
  auto bshd = [](const Tensor<double>& x) {
    const int64_t B = x.shape[0], H = x.shape[1], L = x.shape[2], D = x.shape[3];
    Tensor<double> y({B, L, H, D});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t e = 0; e < D; ++e)
            y.data[((b * L + l) * H + h) * D + e] = x.data[((b * H + h) * L + l) * D + e];
    return y;
  };
  write_npy(path("q.npy"), bshd(q_));
  write_npy(path("k.npy"), bshd(k_));
  write_npy(path("v.npy"), bshd(v_));
  write_npy(path("o.npy"), bshd(o_));
  const nlohmann::json j = check(pattern_, 1);
  EXPECT_EQ(j["probable_cause"],
            "q/k/v and o given as [batch, seq_len, num_heads, head_dim] (pass --layout bshd)");
  EXPECT_FALSE(j["o"]["rows"].empty());
  check(pattern_ + " --layout bshd", 0);
  // text summary on stdout
  const RunResult t = run("check " + qkv() + " --candidate " + path("o.npy") + pattern_ +
                          " --format text");
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_EQ(t.out.rfind("sparseattn check: candidate does NOT match", 0), 0u) << t.out;
  EXPECT_NE(t.out.find("probable cause: "), std::string::npos) << t.out;
}

TEST_F(CheckExplain, PaddedQueryRowsNotZeroedPassWithPaddedQueriesAny) {
  Tensor<uint8_t> pad({1, 40}, 1);
  for (int64_t j = 35; j < 40; ++j) pad.data[j] = 0;
  write_npy(path("pad.npy"), pad, true);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return j < 35 && longformer(i, j, 3);  // rows 35..39 computed over the real keys
  }, sd_);
  const std::string flags = pattern_ + " --key-padding-mask " + path("pad.npy");
  const nlohmann::json j = check(flags, 1);
  EXPECT_NE(j["probable_cause"].get<std::string>().find("padded query rows not zeroed"),
            std::string::npos) << j["probable_cause"];
  EXPECT_EQ(j["o"]["rows"]["0,0"], "35-39");
  EXPECT_EQ(j["o"]["worst_row"]["padded_query"], true);
  const nlohmann::json ok = check(flags + " --padded-queries any", 0);
  EXPECT_EQ(ok["rows_not_compared"], 10);  // 5 rows x 2 heads
}

// Under --masked-score VALUE the oracle gives padded query rows the mean of v: a candidate
// with zero rows there is told so, not that "contract §2 zeroes them".
TEST_F(CheckExplain, PaddedRowsUnderMaskedScoreAreNamedAsTheMeanOfV) {
  Tensor<uint8_t> pad({1, 40}, 1);
  for (int64_t j = 35; j < 40; ++j) pad.data[j] = 0;
  write_npy(path("pad.npy"), pad, true);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return i < 35 && j < 35 && longformer(i, j, 3);  // padded rows 35..39: o = 0
  }, sd_);
  const std::string flags = pattern_ + " --key-padding-mask " + path("pad.npy");
  check(flags, 0);
  const nlohmann::json j = check(flags + " --masked-score -1e9", 1);
  const std::string cause = j["probable_cause"].get<std::string>();
  EXPECT_EQ(cause.rfind("padded query rows differ: every other row matches (under --masked-score "
                        "the oracle gives a padded row the mean of v", 0), 0u) << cause;
  EXPECT_EQ(cause.find("zeroes them"), std::string::npos) << cause;
  EXPECT_EQ(j["o"]["rows"]["0,0"], "35-39");
  check(flags + " --masked-score -1e9 --padded-queries any", 0);
  // As the cause says: with the mean of v over all 40 keys on rows 35..39 it passes.
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 35; i < 40; ++i)
      for (int64_t e = 0; e < 8; ++e) {
        double mean = 0.0;
        for (int64_t k = 0; k < 40; ++k) mean += v_.data[(h * 40 + k) * 8 + e] / 40.0;
        o_.data[(h * 40 + i) * 8 + e] = mean;
      }
  write_npy(path("o.npy"), o_);
  check(flags + " --masked-score -1e9", 0);
}

TEST_F(CheckExplain, KeyPaddingPolarityIgnoreReadsPyTorchMasks) {
  Tensor<uint8_t> torch_mask({1, 40}, 0);  // PyTorch: 1 = ignore
  for (int64_t j = 30; j < 40; ++j) torch_mask.data[j] = 1;
  write_npy(path("pad.npy"), torch_mask, true);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return i < 30 && j < 30 && longformer(i, j, 3);
  }, sd_);
  const std::string flags = pattern_ + " --key-padding-mask " + path("pad.npy");
  const nlohmann::json j = check(flags, 1);
  EXPECT_NE(j["probable_cause"].get<std::string>().find("key-padding polarity inverted"),
            std::string::npos) << j["probable_cause"];
  check(flags + " --key-padding-polarity ignore", 0);
}

TEST_F(CheckExplain, MaskedScoreConstantGivesFullyMaskedRowsTheMeanOfV) {
  Tensor<uint8_t> pad({1, 40}, 1);
  for (int64_t j = 0; j < 40; ++j) pad.data[j] = j < 20;
  write_npy(path("pad.npy"), pad, true);
  // Window 0 + padding, not causal: rows 20..39 are fully masked; a masked_fill(-1e9)
  // library gives them the mean of v over all 40 keys.
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return i < 20 && i == j; }, sd_);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 20; i < 40; ++i)
      for (int64_t e = 0; e < 8; ++e) {
        double m = 0.0;
        for (int64_t j = 0; j < 40; ++j) m += v_.data[((h * 40) + j) * 8 + e];
        o_.data[((h * 40) + i) * 8 + e] = m / 40;
      }
  write_npy(path("o.npy"), o_);
  const std::string flags = " --pattern window --window 0 --key-padding-mask " + path("pad.npy");
  const nlohmann::json j = check(flags, 1);
  EXPECT_NE(j["probable_cause"].get<std::string>().find("mean of v"), std::string::npos)
      << j["probable_cause"];
  EXPECT_EQ(j["o"]["rows"]["0,0"], "20-39");
  check(flags + " --masked-score -1e9", 0);
}

TEST_F(CheckExplain, BigBirdWithOtherRandomBlocksMatchesOnlyTheNonRandomRows) {
  write_inputs(Dims{1, 2, 80, 80, 4, 4});  // 10 blocks of 8: rows 8..71 have random blocks
  const std::string bb = " --pattern bigbird --block-size 8 --num-random-blocks 1";
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("o.npy") + bb + " --seed 11").exit_code, 0);
  const nlohmann::json j = check(bb + " --seed 3", 1);
  EXPECT_NE(j["probable_cause"].get<std::string>().find("BigBird random blocks differ"),
            std::string::npos) << j["probable_cause"];
  for (const auto& [bh, rows] : j["o"]["rows"].items()) {
    // Every failing row lies in the middle blocks (8..71), never in the global blocks.
    const std::string r = rows.get<std::string>();
    EXPECT_GE(std::stoi(r), 8) << bh << ": " << r;
    EXPECT_LE(std::stoi(r.substr(r.find_last_of(",-") + 1)), 71) << bh << ": " << r;
  }
}

// The probes at real sizes and their budget: cli_check_probes_test.cpp.

TEST_F(CheckExplain, BadConventionValuesAreArgumentErrors) {
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return longformer(i, j, 3); }, sd_);
  for (const char* bad : {"--layout bsdh", "--lse-base 10", "--padded-queries some",
                          "--key-padding-polarity drop", "--causal-align middle",
                          "--masked-score nan", "--format yaml"}) {
    const RunResult r = run("check " + qkv() + " --candidate " + path("o.npy") + " " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find(std::string(bad).substr(0, std::string(bad).find(' '))), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
