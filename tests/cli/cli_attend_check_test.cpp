// `sparseattn attend` against an attention written here straight from contract §2-3 (not the
// library's oracle: a predicate per pattern and a two-pass softmax), and `sparseattn
// check` passing right candidates (exit 0) and failing wrong ones (exit 1).
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

// |x - ref| <= 1e-12 * |ref| + 1e-12 (the float64 row of core/numerics.h), and -inf = -inf.
void expect_close_1e12(const std::vector<double>& got, const std::vector<double>& want,
                       const char* name) {
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t e = 0; e < got.size(); ++e) {
    if (std::isinf(want[e])) {
      EXPECT_EQ(got[e], want[e]) << name << "[" << e << "]";
    } else {
      EXPECT_LE(std::fabs(got[e] - want[e]), 1e-12 * std::fabs(want[e]) + 1e-12)
          << name << "[" << e << "] = " << got[e] << ", independent " << want[e];
    }
  }
}

class Attend : public CliTest {
 protected:
  void write_qkv(const Dims& d, bool drop_batch = false) {
    q_ = uniform_tensor({d.B, d.H, d.Lq, d.D}, 1);
    k_ = uniform_tensor({d.B, d.H, d.Lk, d.D}, 2);
    v_ = uniform_tensor({d.B, d.H, d.Lk, d.Dv}, 3);
    Tensor<double> q = q_, k = k_, v = v_;
    if (drop_batch) {  // rank-3 files [H, L, D]: contract §1, missing leading dims are 1
      q.shape.erase(q.shape.begin());
      k.shape.erase(k.shape.begin());
      v.shape.erase(v.shape.begin());
    }
    write_npy(path("q.npy"), q);
    write_npy(path("k.npy"), k);
    write_npy(path("v.npy"), v);
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  }
  Tensor<double> q_, k_, v_;
};

TEST_F(Attend, Float64LongformerDilatedMatchesIndependentComputation) {
  const Dims d{2, 2, 37, 37, 5, 3};  // head_dim 5 and head_dim_v 3: not powers of two
  write_qkv(d);
  const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --lse " +
                          path("lse.npy") +
                          " --pattern longformer --window 3 --dilation 2 --global 0,10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t w = 3, dil = 2;
  auto allowed = [&](int64_t, int64_t, int64_t i, int64_t j) {
    const int64_t delta = j - i;
    const bool band = delta % dil == 0 && std::abs(delta / dil) <= w;
    return band || i == 0 || i == 10 || j == 0 || j == 10;
  };
  std::vector<double> o, lse;
  independent_attention(q_, k_, v_, d, 1.0 / std::sqrt(5.0), allowed, o, lse);
  const Tensor<double> got_o = read_npy_float(path("o.npy"), "o");
  const Tensor<double> got_lse = read_npy_float(path("lse.npy"), "lse");
  EXPECT_EQ(got_o.shape, (Shape{2, 2, 37, 3}));
  EXPECT_EQ(got_lse.shape, (Shape{2, 2, 37}));
  EXPECT_EQ(read_npy_header(path("o.npy"), "o").dtype, NpyDtype::float64);
  expect_close_1e12(got_o.data, o, "o");
  expect_close_1e12(got_lse.data, lse, "lse");
}

TEST_F(Attend, CausalWindowAlignsBottomRightWithScaleAndRank3Files) {
  // Decoding-style: 5 queries against 12 keys, query i at key position i + 7.
  const Dims d{1, 3, 5, 12, 4, 4};
  write_qkv(d, /*drop_batch=*/true);
  const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --lse " +
                          path("lse.npy") + " --pattern window --window 2 --causal --scale 0.3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto allowed = [](int64_t, int64_t, int64_t i, int64_t j) {
    const int64_t p = i + 12 - 5;
    return j <= p && j >= p - 2;
  };
  std::vector<double> o, lse;
  independent_attention(q_, k_, v_, d, 0.3, allowed, o, lse);
  const Tensor<double> got_o = read_npy_float(path("o.npy"), "o");
  EXPECT_EQ(got_o.shape, (Shape{3, 5, 4}));  // q's rank is kept
  expect_close_1e12(got_o.data, o, "o");
  expect_close_1e12(read_npy_float(path("lse.npy"), "lse").data, lse, "lse");
}

TEST_F(Attend, KeyPaddingMasksKeysAndZeroesPaddedRows) {
  const Dims d{2, 1, 9, 9, 3, 2};
  write_qkv(d);
  Tensor<uint8_t> pad({2, 9}, 1);
  for (int64_t j = 6; j < 9; ++j) pad.data[j] = 0;  // batch 0: last three tokens padded
  pad.data[9 + 0] = 0;                             // batch 1: first token padded
  write_npy(path("pad.npy"), pad, true);
  const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --lse " +
                          path("lse.npy") + " --key-padding-mask " + path("pad.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto allowed = [&](int64_t b, int64_t, int64_t i, int64_t j) {
    return pad.data[b * 9 + i] && pad.data[b * 9 + j];
  };
  std::vector<double> o, lse;
  independent_attention(q_, k_, v_, d, 1.0 / std::sqrt(3.0), allowed, o, lse);
  const Tensor<double> got_o = read_npy_float(path("o.npy"), "o");
  const Tensor<double> got_lse = read_npy_float(path("lse.npy"), "lse");
  expect_close_1e12(got_o.data, o, "o");
  expect_close_1e12(got_lse.data, lse, "lse");
  EXPECT_EQ(got_lse.data[7], -INFINITY);       // padded query row of batch 0
  EXPECT_EQ(got_o.data[7 * 2], 0.0);
  EXPECT_EQ(got_lse.data[9 + 0], -INFINITY);   // padded query row of batch 1
}

TEST_F(Attend, EveryReferenceStepThatServesBigBirdMatchesTheOracleFile) {
  const Dims d{1, 2, 70, 70, 4, 4};  // 70 = 4 blocks of 16 + a partial block of 6
  write_qkv(d);
  const std::string pattern = " --pattern bigbird --block-size 16 --num-random-blocks 1 --seed 3";
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("oracle.npy") + pattern).exit_code, 0);
  for (const char* impl : {"a2_sparse_rows", "a4_bigbird_blocks", "a5_flash_tiled"}) {
    SCOPED_TRACE(impl);
    const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --impl " + impl +
                            pattern);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_close_1e12(read_npy_float(path("o.npy"), "o").data,
                      read_npy_float(path("oracle.npy"), "o").data, "o");
  }
}

TEST_F(Attend, DtypeFloat32WritesTheRoundedOracle) {
  const Dims d{1, 1, 8, 8, 4, 4};
  write_qkv(d);
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("o64.npy")).exit_code, 0);
  const RunResult r = run("attend " + qkv() + " --out " + path("o32.npy") + " --dtype float32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_header(path("o32.npy"), "o").dtype, NpyDtype::float32);
  const Tensor<double> o64 = read_npy_float(path("o64.npy"), "o");
  const Tensor<double> o32 = read_npy_float(path("o32.npy"), "o");
  for (int64_t e = 0; e < o64.numel(); ++e)
    EXPECT_EQ(o32.data[e], static_cast<double>(static_cast<float>(o64.data[e])));
}

// --- check ------------------------------------------------------------------------

class Check : public Attend {
 protected:
  void SetUp() override {
    Attend::SetUp();
    write_qkv(Dims{1, 2, 20, 20, 4, 4});
    ASSERT_EQ(run("attend " + qkv() + kPattern + " --out " + path("o.npy") + " --lse " +
                  path("lse.npy")).exit_code, 0);
    o_ = read_npy_float(path("o.npy"), "o");
    lse_ = read_npy_float(path("lse.npy"), "lse");
  }
  RunResult check(const std::string& extra) const {
    return run("check " + qkv() + kPattern + " " + extra);
  }
  // Causal window 2: rows near the start see fewer keys (row 0 sees only key 0).
  const std::string kPattern = " --pattern window --window 2 --causal";
  Tensor<double> o_, lse_;
};

TEST_F(Check, CorrectFloat64CandidatePassesWithExitZero) {
  const RunResult r = check("--candidate " + path("o.npy") + " --candidate-lse " + path("lse.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pass"], true);
  EXPECT_EQ(j["o"]["pass"], true);
  EXPECT_EQ(j["lse"]["pass"], true);
  EXPECT_EQ(j["o"]["atol"], 1e-12);  // float64 candidate: the float64 row of the table
  EXPECT_LE(j["o"]["budget_used"].get<double>(), 1.0);
}

TEST_F(Check, Float32CandidateIsJudgedWithTheFloat32Tolerance) {
  write_npy(path("o32.npy"), tensor_cast<float>(o_));
  const RunResult r = check("--candidate " + path("o32.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["o"]["atol"], 2e-5);
}

TEST_F(Check, PerturbedCandidateFailsWithExitOne) {
  Tensor<double> bad = o_;
  bad.data[17] += 1e-6;  // 1e6 times the float64 budget
  write_npy(path("bad.npy"), bad);
  const RunResult r = check("--candidate " + path("bad.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pass"], false);
  EXPECT_EQ(j["o"]["num_mismatched"], 1);
  EXPECT_GT(j["o"]["budget_used"].get<double>(), 1.0);
}

TEST_F(Check, LooserToleranceFlagsAcceptTheSamePerturbation) {
  Tensor<double> bad = o_;
  bad.data[17] += 1e-6;
  write_npy(path("bad.npy"), bad);
  EXPECT_EQ(check("--candidate " + path("bad.npy") + " --atol 1e-5 --rtol 0").exit_code, 0);
}

TEST_F(Check, NaNCandidateFails) {
  Tensor<double> bad = o_;
  bad.data[3] = NAN;
  write_npy(path("nan.npy"), bad);
  const RunResult r = check("--candidate " + path("nan.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["o"]["num_nonfinite"], 1);
}

TEST_F(Check, WrongLseFailsEvenWhenOIsRight) {
  Tensor<double> bad = lse_;
  for (int64_t i = 0; i + 1 < bad.numel(); ++i) bad.data[i] = lse_.data[i + 1];  // shifted row
  write_npy(path("lse_bad.npy"), bad);
  const RunResult r = check("--candidate " + path("o.npy") + " --candidate-lse " + path("lse_bad.npy"));
  EXPECT_EQ(r.exit_code, 1);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["o"]["pass"], true);
  EXPECT_EQ(j["lse"]["pass"], false);
}

// Found by tests/fuzz/fuzz_check: finite inputs whose score overflows float64 (q holds
// 1.7976931348623157e308, the largest double) made the oracle's row NaN, and `check` then
// failed a candidate against it (exit 1, reference null) instead of refusing the inputs.
// The row's true output is v (one key), but the oracle cannot give it: refuse, naming the row.
TEST_F(Check, InputsWhoseScoresOverflowTheOracleAreRefusedNamingTheRow) {
  Tensor<double> q({1, 1, 4, 4}, 0.0), k({1, 1, 1, 4}, 1.5), v({1, 1, 1, 4}, 1.5);
  q.data[1 * 4 + 2] = 1.7976931348623157e308;  // row 1: 0.5 * 1.5 * 1.8e308 summed as +inf
  write_npy(path("q.npy"), q);
  write_npy(path("k.npy"), k);
  write_npy(path("v.npy"), v);
  write_npy(path("cand.npy"), Tensor<double>({1, 1, 4, 4}, 1.5));  // any well-formed candidate
  const RunResult r = run("check " + qkv() + " --candidate " + path("cand.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("invalid --q, --k, --v = row [0,0,1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("overflows"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // no report judging the candidate
}

TEST_F(Check, CandidateForAnotherPatternFails) {
  // The output of a different pattern is a wrong answer for this one.
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("dense.npy")).exit_code, 0);
  EXPECT_EQ(check("--candidate " + path("dense.npy")).exit_code, 1);
}

}  // namespace
}  // namespace sparseattn::testing_cli
