// Checks contract §4.9 (the check report's fields) and §4.10 (which tensors the
// reference-error rule judges) through the CLI: a check that compares nothing fails and
// never suggests a flag that would skip every row; failing rows are listed up to 24 ranges;
// a NaN is the worst element and max_abs_error says NaN; error_over_tolerance is the budget
// used in JSON and text, on a pass too; a wrong dq gets o's location fields and a cause.
// Candidates come from the tests' own attention (cli_harness.h) and the gradient oracle b1.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"
#include "pattern/pattern.h"
#include "reference/backward/backward.h"

namespace sparseattn::testing_cli {
namespace {

class CheckReportTest : public CliTest {
 protected:
  void inputs(const Dims& d) {
    d_ = d;
    q_ = uniform_tensor({d.B, d.H, d.Lq, d.D}, 21);
    k_ = uniform_tensor({d.B, d.H, d.Lk, d.D}, 22);
    v_ = uniform_tensor({d.B, d.H, d.Lk, d.Dv}, 23);
    write_npy(path("q.npy"), q_);
    write_npy(path("k.npy"), k_);
    write_npy(path("v.npy"), v_);
  }
  // o (and lse) of the tests' attention with scale 1/sqrt(D) under `allowed`.
  Tensor<double> attention(const Allowed& allowed, Tensor<double>* lse = nullptr) const {
    std::vector<double> o, l;
    independent_attention(q_, k_, v_, d_, 1.0 / std::sqrt(double(d_.D)), allowed, o, l);
    Tensor<double> t({d_.B, d_.H, d_.Lq, d_.Dv});
    t.data = o;
    if (lse) {
      *lse = Tensor<double>({d_.B, d_.H, d_.Lq});
      lse->data = l;
    }
    return t;
  }
  RunResult check(const std::string& extra) const {
    return run("check --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy") +
               " --candidate " + path("o.npy") + " " + extra);
  }
  nlohmann::json check_json(const std::string& extra, int want_exit) const {
    const RunResult r = check(extra);
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    return r.out.empty() ? nlohmann::json() : nlohmann::json::parse(r.out);
  }
  static bool all(int64_t, int64_t, int64_t, int64_t) { return true; }
  Dims d_{};
  Tensor<double> q_, k_, v_;
};

// One decoded query against a preallocated 4096-slot cache with 1000 slots filled: the
// query sits at key position 4095 (contract §2), which the mask marks as padding.
TEST_F(CheckReportTest, DecodeAgainstAPaddedCacheComparesNothingAndFails) {
  inputs(Dims{1, 1, 1, 4096, 8, 8});
  Tensor<uint8_t> pad({1, 4096}, 0);
  for (int64_t j = 0; j < 1000; ++j) pad.data[j] = 1;
  write_npy(path("pad.npy"), pad, true);
  write_npy(path("o.npy"), Tensor<double>({1, 1, 1, 8}, 7.0));
  const std::string flags = "--key-padding-mask " + path("pad.npy");
  // As given: the padded query's o must be 0; all 7s fails, and no probe may suggest
  // --padded-queries any (it would skip the only row).
  const nlohmann::json j = check_json(flags, 1);
  EXPECT_EQ(j["o"]["nothing_compared"], false);
  EXPECT_EQ(j["o"]["worst_row"]["padded_query"], true);
  EXPECT_EQ(j["probable_cause"].get<std::string>().find("padded-queries"), std::string::npos)
      << j["probable_cause"];
  for (const nlohmann::json& p : j["probes"]["tried"]) EXPECT_FALSE(p["matches"]) << p;
  // With it: nothing is compared, which fails (was "o: ok (8 elements)", exit 0).
  const nlohmann::json any = check_json(flags + " --padded-queries any", 1);
  EXPECT_EQ(any["pass"], false);
  EXPECT_EQ(any["o"]["pass"], false);
  EXPECT_EQ(any["o"]["nothing_compared"], true);
  EXPECT_EQ(any["o"]["num_compared"], 0);
  EXPECT_EQ(any["o"]["num_elements"], 8);
  EXPECT_EQ(any["rows_not_compared"], 1);
  EXPECT_EQ(any["probable_cause"].get<std::string>().rfind("nothing compared", 0), 0u)
      << any["probable_cause"];
  const RunResult t = check(flags + " --padded-queries any --format text");
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.out.find("o: nothing compared (0 of 8 elements"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("o: ok"), std::string::npos) << t.out;
}

TEST_F(CheckReportTest, EveryRowSkippedFailsForOAndLseUnderEitherRule) {
  inputs(Dims{2, 2, 6, 6, 4, 4});
  Tensor<uint8_t> pad({2, 6}, 0);  // every key padded: every query is padding too
  write_npy(path("pad.npy"), pad, true);
  Tensor<double> lse;
  write_npy(path("o.npy"), attention(all, &lse));  // any values: none may be judged
  write_npy(path("lse.npy"), lse);
  const std::string flags = "--key-padding-mask " + path("pad.npy") +
                            " --padded-queries any --candidate-lse " + path("lse.npy");
  for (const std::string rule : {"", " --tolerance-rule reference-error"}) {
    const nlohmann::json j = check_json(flags + rule, 1);
    EXPECT_EQ(j["o"]["nothing_compared"], true) << rule;
    EXPECT_EQ(j["lse"]["nothing_compared"], true) << rule;
    EXPECT_EQ(j["rows_not_compared"], 24) << rule;  // 2 batches x 2 heads x 6 rows
    EXPECT_EQ(j["pass"], false) << rule;
  }
  // Without --padded-queries any the same rows are compared against o = 0: a real verdict.
  write_npy(path("o.npy"), Tensor<double>({2, 2, 6, 4}, 0.0));
  EXPECT_EQ(check_json("--key-padding-mask " + path("pad.npy"), 0)["o"]["num_compared"], 96);
}

TEST_F(CheckReportTest, FailingRowsShowExactly24RangesThenTheCountLeft) {
  inputs(Dims{1, 1, 60, 60, 4, 4});
  Tensor<double> o = attention(all);
  for (int64_t i = 0; i < 60; i += 2)
    for (int64_t x = 0; x < 4; ++x) o.data[i * 4 + x] += 1.0;  // every even row: 30 ranges
  write_npy(path("o.npy"), o);
  const nlohmann::json j = check_json("--pattern dense", 1);
  std::string want;
  for (int64_t i = 0; i < 48; i += 2) want += (want.empty() ? "" : ",") + std::to_string(i);
  want += ",... (6 more ranges)";
  EXPECT_EQ(j["o"]["rows"]["0,0"], want);
  EXPECT_EQ(j["o"]["mismatches"]["0,0"], 120);
}

TEST_F(CheckReportTest, ANanIsTheWorstElementAndMaxAbsErrorSaysNan) {
  inputs(Dims{1, 2, 10, 10, 4, 4});
  Tensor<double> o = attention(all);
  o.data[(1 * 10 + 6) * 4 + 2] = NAN;  // the only mismatch
  write_npy(path("o.npy"), o);
  nlohmann::json j = check_json("--pattern dense", 1);
  EXPECT_EQ(j["o"]["max_abs_error"], "nan");  // was 0.0: the largest finite error
  EXPECT_EQ(j["o"]["worst_index"], nlohmann::json({0, 1, 6, 2}));
  EXPECT_EQ(j["o"]["worst_candidate"], "nan");
  EXPECT_EQ(j["o"]["error_over_tolerance"], "inf");
  // An Inf earlier in the tensor and a large finite error: the NaN is still the worst.
  o.data[3] = INFINITY;
  o.data[5] += 0.5;
  write_npy(path("o.npy"), o);
  j = check_json("--pattern dense", 1);
  EXPECT_EQ(j["o"]["worst_index"], nlohmann::json({0, 1, 6, 2}));
  EXPECT_EQ(j["o"]["worst_row"]["row"], 6);
  EXPECT_EQ(j["o"]["max_abs_error"], "nan");
  EXPECT_EQ(j["o"]["first_nonfinite"]["index"], nlohmann::json({0, 0, 0, 3}));
  EXPECT_EQ(j["o"]["num_mismatched"], 3);
}

TEST_F(CheckReportTest, ErrorOverToleranceIsTheBudgetUsedOnAPassInJsonAndText) {
  inputs(Dims{1, 1, 12, 12, 4, 4});
  Tensor<double> o = attention(all);
  o.data[17] += 3e-13;  // within float64's 1e-12 + 1e-12 |ref|, not exact
  write_npy(path("o.npy"), o);
  const nlohmann::json j = check_json("--pattern dense", 0);
  const double used = j["o"]["budget_used"].get<double>();
  EXPECT_GT(used, 0.1);
  EXPECT_LE(used, 1.0);
  EXPECT_EQ(j["o"]["error_over_tolerance"].get<double>(), used);  // was 0 on a pass
  const RunResult t = check("--pattern dense --format text");
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  char want[64];
  std::snprintf(want, sizeof want, "error/tolerance %.3g;", used);
  EXPECT_NE(t.out.find(want), std::string::npos) << want << "\n" << t.out;
}

TEST_F(CheckReportTest, AWrongDqCarriesOsFieldsAndACause) {
  inputs(Dims{1, 2, 9, 9, 4, 4});
  const Tensor<double> dout = uniform_tensor({1, 2, 9, 4}, 24);
  write_npy(path("do.npy"), dout);
  write_npy(path("o.npy"), attention(all));
  const Pattern dense = materialize(PatternSpec{}, {1, 2, 9, 9});
  GradientResult g = b1_dense_masked_grad(q_, k_, v_, dout, dense, nullptr);
  g.dq.data[(0 * 9 + 3) * 4 + 1] += 1e-3;  // (0, 0, 3, 1)
  g.dq.data[(1 * 9 + 7) * 4 + 0] = NAN;    // (0, 1, 7, 0)
  write_npy(path("dq.npy"), g.dq);
  const std::string flags = "--pattern dense --dout " + path("do.npy") + " --candidate-dq " + path("dq.npy");
  const nlohmann::json j = check_json(flags, 1);
  const nlohmann::json& dq = j["dq"];
  EXPECT_EQ(j["o"]["pass"], true);
  EXPECT_EQ(dq["mismatches"], nlohmann::json({{"0,0", 1}, {"0,1", 1}}));
  EXPECT_EQ(dq["rows"], nlohmann::json({{"0,0", "3"}, {"0,1", "7"}}));
  EXPECT_EQ(dq["rows_are"], "query");
  EXPECT_EQ(dq["worst_index"], nlohmann::json({0, 1, 7, 0}));  // the NaN
  EXPECT_EQ(dq["worst_row"]["row"], 7);
  EXPECT_EQ(dq["worst_row"]["allowed_keys"], "0-8");
  EXPECT_EQ(dq["first_nonfinite"]["index"], nlohmann::json({0, 1, 7, 0}));
  EXPECT_EQ(dq["first_nonfinite"]["candidate"], "nan");
  EXPECT_EQ(dq["max_abs_error"], "nan");
  EXPECT_TRUE(dq.contains("error_over_tolerance"));
  EXPECT_EQ(dq["probable_cause"].get<std::string>().rfind("unknown: no gradient probe", 0), 0u)
      << dq["probable_cause"];
  EXPECT_EQ(j["probable_cause"], dq["probable_cause"]);
  const RunResult t = check(flags + " --format text");
  EXPECT_NE(t.out.find("dq fails at (batch, head) 0,1: query rows 7\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("dq first non-finite at index (0, 1, 7, 0): candidate nan"),
            std::string::npos) << t.out;
  EXPECT_NE(t.out.find("probable cause: unknown: no gradient probe"), std::string::npos) << t.out;
}

// dq and dk computed with scale 1/head_dim: the gradient probes name it (dv has no factor).
TEST_F(CheckReportTest, GradientsOfAnotherScaleAreNamed) {
  inputs(Dims{1, 1, 8, 8, 4, 4});
  const Tensor<double> dout = uniform_tensor({1, 1, 8, 4}, 25);
  write_npy(path("do.npy"), dout);
  write_npy(path("o.npy"), attention(all));
  const double quarter = 0.25;
  const GradientResult g = b1_dense_masked_grad(q_, k_, v_, dout,
                                                materialize(PatternSpec{}, {1, 1, 8, 8}), &quarter);
  write_npy(path("dk.npy"), g.dk);
  const nlohmann::json j =
      check_json("--pattern dense --dout " + path("do.npy") + " --candidate-dk " + path("dk.npy"), 1);
  EXPECT_EQ(j["dk"]["rows_are"], "key");
  EXPECT_TRUE(j["dk"]["worst_row"].contains("allowed_queries"));
  EXPECT_EQ(j["dk"]["probable_cause"],
            "scale 1/head_dim (candidate gradients match the oracle's with --scale 0.25)");
}

TEST_F(CheckReportTest, ReferenceErrorRuleWithDoutIsRefused) {
  inputs(Dims{1, 1, 8, 8, 4, 4});
  write_npy(path("o.npy"), attention(all));
  write_npy(path("do.npy"), uniform_tensor({1, 1, 8, 4}, 26));
  write_npy(path("dq.npy"), q_);
  const RunResult r = check("--pattern dense --tolerance-rule reference-error --dout " +
                            path("do.npy") + " --candidate-dq " + path("dq.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--tolerance-rule"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("judges o and lse only"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
