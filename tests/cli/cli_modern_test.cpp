// Checks contract §2.7–§2.9 through the command line: grouped-query heads (k and v with fewer
// heads than q), --softcap, --alibi-slopes and --sinks in `attend` and `check`, contract
// §4.9's probes of their usual mistakes (each test plants one mistake in a candidate and
// requires `check` to name it), and §5.1's refusals (exit 2, one line naming the argument,
// no file written).
//
// The planted candidates are the oracle's own answer with one thing done wrong: `attend`
// run with that thing changed where the CLI can say it (sinks left out, the slope's sign,
// kv heads tiled), and a loop written here where it cannot (softcap after the mask, ALiBi
// aligned top-left). The oracle's values themselves are checked by hand-computed cases in
// tests/reference/modern_attention_test.cpp.
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

// H_q = 4 query heads over H_kv = 2 kv heads, a window of 3, L_q = 12 < L_k = 16.
constexpr int64_t kB = 1, kHq = 4, kHkv = 2, kLq = 12, kLk = 16, kD = 8;

class Modern : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    q_ = uniform_tensor({kB, kHq, kLq, kD}, 11);
    k_ = uniform_tensor({kB, kHkv, kLk, kD}, 12);
    v_ = uniform_tensor({kB, kHkv, kLk, kD}, 13);
    for (double& x : q_.data) x *= 3.0;  // scores large enough for the cap to matter
    write_npy(path("q.npy"), q_);
    write_npy(path("k.npy"), k_);
    write_npy(path("v.npy"), v_);
    Tensor<double> sinks({kHq});
    sinks.data = {0.5, -1.0, 2.0, 0.0};
    write_npy(path("sinks.npy"), sinks);
    Tensor<double> slopes({kHq});
    slopes.data = {0.5, 0.25, 0.125, 0.0625};
    write_npy(path("slopes.npy"), slopes);
    for (double& a : slopes.data) a = -a;
    write_npy(path("neg_slopes.npy"), slopes);
  }
  std::string qkv(const std::string& k = "k.npy", const std::string& v = "v.npy") const {
    return "--q " + path("q.npy") + " --k " + path(k) + " --v " + path(v);
  }
  // `attend` with the oracle into o_<tag>.npy and lse_<tag>.npy.
  void attend(const std::string& tag, const std::string& flags,
              const std::string& k = "k.npy", const std::string& v = "v.npy") {
    const RunResult r = run("attend " + qkv(k, v) + " --out " + path("o_" + tag + ".npy") +
                            " --lse " + path("lse_" + tag + ".npy") + " " + kPattern + " " + flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  nlohmann::json check(const std::string& o, const std::string& lse, const std::string& flags,
                       int want_exit) {
    last_ = run("check " + qkv() + " --candidate " + path(o) +
                (lse.empty() ? "" : " --candidate-lse " + path(lse)) + " " + kPattern + " " + flags);
    EXPECT_EQ(last_.exit_code, want_exit) << last_.out << last_.err;
    return last_.exit_code <= 1 ? nlohmann::json::parse(last_.out) : nlohmann::json();
  }
  static std::string cause(const nlohmann::json& j) {
    return j.value("probable_cause", std::string("(none)"));
  }
  // k or v with its kv heads tiled to H_q heads: head h holds kv head h mod H_kv.
  void write_tiled(const std::string& name, const Tensor<double>& x) {
    const int64_t L = x.shape[2], D = x.shape[3];
    Tensor<double> t({kB, kHq, L, D});
    for (int64_t h = 0; h < kHq; ++h)
      std::copy_n(x.ptr() + (h % kHkv) * L * D, L * D, t.ptr() + h * L * D);
    write_npy(path(name), t);
  }

  // Every modifier at once.
  std::string all_flags() const {
    return "--softcap 2 --sinks " + path("sinks.npy") + " --alibi-slopes " + path("slopes.npy");
  }

  static constexpr const char* kPattern = "--pattern window --window 3";
  Tensor<double> q_, k_, v_;
  RunResult last_;
};

TEST_F(Modern, TheOraclesOwnAnswerPassesWithEveryModifier) {
  attend("all", all_flags());
  const nlohmann::json j = check("o_all.npy", "lse_all.npy", all_flags(), 0);
  EXPECT_EQ(j["shape"]["num_kv_heads"], kHkv);
  EXPECT_EQ(j["score_mods"], "softcap=2, alibi [4], sinks");
  EXPECT_EQ(j["o"]["num_compared"], kB * kHq * kLq * kD) << j["o"].dump();
}

TEST_F(Modern, SinksIgnoredIsNamed) {
  attend("nosink", "--softcap 2");
  const nlohmann::json j = check("o_nosink.npy", "lse_nosink.npy", "--softcap 2 --sinks " + path("sinks.npy"), 1);
  EXPECT_EQ(cause(j).rfind("sinks ignored", 0), 0u) << cause(j);
}

TEST_F(Modern, SinkInOnlyOneOfLseAndPIsNamed) {
  attend("sink", "--sinks " + path("sinks.npy"));
  attend("nosink", "");
  const std::string flags = "--sinks " + path("sinks.npy");
  // o without the sink, lse with it.
  nlohmann::json j = check("o_nosink.npy", "lse_sink.npy", flags, 1);
  EXPECT_NE(cause(j).find("the sink is in lse but not in p"), std::string::npos) << cause(j);
  // o with the sink, lse without it.
  j = check("o_sink.npy", "lse_nosink.npy", flags, 1);
  EXPECT_NE(cause(j).find("the sink is in p but not in lse"), std::string::npos) << cause(j);
}

TEST_F(Modern, SoftcapMissingIsNamed) {
  attend("nocap", "");
  const nlohmann::json j = check("o_nocap.npy", "", "--softcap 2", 1);
  EXPECT_EQ(cause(j).rfind("softcap missing", 0), 0u) << cause(j);
}

TEST_F(Modern, SoftcapBeforeTheScaleIsNamed) {
  // scale·c·tanh(q·k/c) = c'·tanh(scale·q·k/c') with c' = scale·c: the oracle with that cap.
  const double scale = 1.0 / std::sqrt(double(kD)), c = 2.0;
  char cap[32];
  std::snprintf(cap, sizeof cap, "%.17g", scale * c);
  attend("early", std::string("--softcap ") + cap);
  const nlohmann::json j = check("o_early.npy", "", "--softcap 2", 1);
  EXPECT_EQ(cause(j).rfind("softcap applied before the scale", 0), 0u) << cause(j);
}

TEST_F(Modern, SoftcapAfterTheMaskIsNamed) {
  // The mistaken kernel: mask first (-inf), then cap: every masked key scores c·tanh(-inf) = -c
  // and enters the softmax. Written here: window 3 around p = i + 4, kv head h / 2.
  const double scale = 1.0 / std::sqrt(double(kD)), c = 2.0;
  Tensor<double> o({kB, kHq, kLq, kD}, 0.0);
  for (int64_t h = 0; h < kHq; ++h)
    for (int64_t i = 0; i < kLq; ++i) {
      const int64_t p = i + kLk - kLq;
      std::vector<double> s(kLk);
      for (int64_t j = 0; j < kLk; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < kD; ++d)
          dot += q_.data[(h * kLq + i) * kD + d] * k_.data[((h / 2) * kLk + j) * kD + d];
        s[j] = std::abs(j - p) <= 3 ? c * std::tanh(scale * dot / c) : -c;
      }
      double z = 0.0;
      for (double x : s) z += std::exp(x);
      for (int64_t j = 0; j < kLk; ++j)
        for (int64_t d = 0; d < kD; ++d)
          o.data[(h * kLq + i) * kD + d] += std::exp(s[j]) / z * v_.data[((h / 2) * kLk + j) * kD + d];
    }
  write_npy(path("o_late.npy"), o);
  const nlohmann::json j = check("o_late.npy", "", "--softcap 2", 1);
  EXPECT_EQ(cause(j).rfind("softcap applied after the mask", 0), 0u) << cause(j);
}

TEST_F(Modern, AlibiSignFlippedIsNamed) {
  attend("neg", "--alibi-slopes " + path("neg_slopes.npy"));
  const nlohmann::json j = check("o_neg.npy", "", "--alibi-slopes " + path("slopes.npy"), 1);
  EXPECT_EQ(cause(j).rfind("ALiBi's sign flipped", 0), 0u) << cause(j);
}

TEST_F(Modern, AlibiAlignedTopLeftIsNamed) {
  // Distance |i - j| instead of |p - j| (L_q = 12 < L_k = 16: p = i + 4).
  const double scale = 1.0 / std::sqrt(double(kD));
  const double slope[kHq] = {0.5, 0.25, 0.125, 0.0625};
  Tensor<double> o({kB, kHq, kLq, kD}, 0.0);
  for (int64_t h = 0; h < kHq; ++h)
    for (int64_t i = 0; i < kLq; ++i) {
      const int64_t p = i + kLk - kLq;
      double m = -INFINITY;
      std::vector<double> s(kLk, -INFINITY);
      for (int64_t j = std::max<int64_t>(0, p - 3); j <= std::min(kLk - 1, p + 3); ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < kD; ++d)
          dot += q_.data[(h * kLq + i) * kD + d] * k_.data[((h / 2) * kLk + j) * kD + d];
        s[j] = scale * dot - slope[h] * std::abs(double(i - j));
        m = std::max(m, s[j]);
      }
      double z = 0.0;
      for (double x : s) z += std::exp(x - m);
      for (int64_t j = 0; j < kLk; ++j)
        for (int64_t d = 0; d < kD; ++d)
          o.data[(h * kLq + i) * kD + d] +=
              std::exp(s[j] - m) / z * v_.data[((h / 2) * kLk + j) * kD + d];
    }
  write_npy(path("o_tl.npy"), o);
  const nlohmann::json j = check("o_tl.npy", "", "--alibi-slopes " + path("slopes.npy"), 1);
  EXPECT_EQ(cause(j).rfind("ALiBi aligned top-left", 0), 0u) << cause(j);
}

TEST_F(Modern, KvHeadTiledInsteadOfRepeatedIsNamed) {
  write_tiled("k_tiled.npy", k_);
  write_tiled("v_tiled.npy", v_);
  attend("tiled", "", "k_tiled.npy", "v_tiled.npy");
  const nlohmann::json j = check("o_tiled.npy", "", "", 1);
  EXPECT_EQ(cause(j).rfind("query head h read kv head h mod H_kv", 0), 0u) << cause(j);
}

TEST_F(Modern, BadValuesExitTwoNamingTheArgument) {
  struct Case {
    std::string flags, says;
  } cases[] = {
      {"--softcap 0", "invalid --softcap = 0: must be a finite number > 0"},
      {"--softcap -1", "invalid --softcap = -1: must be a finite number > 0"},
      {"--softcap nan", "invalid --softcap = nan: must be a finite real number"},
      {"--sinks " + path("slopes.npy") + " --alibi-slopes " + path("q.npy"),
       "invalid --alibi-slopes shape = [1, 4, 12, 8]: must be [4] (q num_heads) or [1, 4]"},
      {"--sinks " + path("v.npy"), "invalid --sinks shape = [1, 2, 16, 8]: must be [4]"},
      {"--sinks " + path("sinks.npy") + " --impl a3_window_band",
       "invalid --impl = a3_window_band: does not serve grouped-query heads, sinks"},
      {"--softcap 2 --masked-score 0", "invalid --masked-score = 0: must be -inf:"},
  };
  for (const Case& c : cases) {
    const RunResult r = run("attend " + qkv() + " --out " + path("o_bad.npy") + " " + kPattern +
                            " " + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.flags << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o_bad.npy")) << c.flags;
  }
  // H_q = 4 over H_kv = 3 does not group.
  write_npy(path("k3.npy"), uniform_tensor({kB, 3, kLk, kD}, 21));
  write_npy(path("v3.npy"), uniform_tensor({kB, 3, kLk, kD}, 22));
  const RunResult r = run("attend " + qkv("k3.npy", "v3.npy") + " --out " + path("o_bad.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("invalid k num_heads = 3: must divide q num_heads (4)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(exists("o_bad.npy"));
}

TEST_F(Modern, TopLeftCausalIsRefusedWithAlibiOnly) {
  // contract §2.8: ALiBi's distance is measured from the bottom-right position, so
  // --causal-align top-left is refused with --alibi-slopes, naming both; with --sinks (or
  // --softcap) alone it is served.
  const std::string causal = " --pattern window --window 3 --causal --causal-align top-left ";
  RunResult r = run("attend " + qkv() + " --out " + path("o_tl.npy") + causal + "--alibi-slopes " +
                    path("slopes.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("invalid --causal-align = top-left: must be bottom-right with "
                       "--alibi-slopes"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(exists("o_tl.npy"));
  r = run("attend " + qkv() + " --out " + path("o_tl.npy") + causal + "--sinks " +
          path("sinks.npy"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(exists("o_tl.npy"));
}

TEST_F(Modern, DsinksNeedsSinks) {
  // --dsinks is the gradient of --sinks: with --dout but without --sinks it is refused
  // (exit 2) before any file is written.
  write_npy(path("do.npy"), uniform_tensor({kB, kHq, kLq, kD}, 31));
  const RunResult r = run("attend " + qkv() + " --out " + path("o_ds.npy") + " " + kPattern +
                          " --dout " + path("do.npy") + " --dq " + path("dq.npy") + " --dsinks " +
                          path("ds.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs --dout DO.npy and --sinks S.npy"), std::string::npos) << r.err;
  EXPECT_FALSE(exists("ds.npy"));
  EXPECT_FALSE(exists("o_ds.npy"));
}

TEST_F(Modern, TextReportNamesTheKvHeadsAndTheScoreMods) {
  // check --format text: the shape line names num_kv_heads when it differs from num_heads
  // (the field's name, as in the JSON report's shape), and a line lists the modifiers.
  attend("cap", "--softcap 2");
  const RunResult r = run("check " + qkv() + " --candidate " + path("o_cap.npy") +
                          " --candidate-lse " + path("lse_cap.npy") + " " + kPattern +
                          " --softcap 2 --format text");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("; batch 1, num_heads 4, num_kv_heads 2, seq_len_q 12, seq_len_k 16, "
                       "head_dim 8, head_dim_v 8\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nscores softcap=2\n"), std::string::npos) << r.out;
}

TEST_F(Modern, CandidateDsinksIsJudgedAndAWrongSignFails) {
  // check --candidate-dsinks (contract §7.7): b1's own dσ (attend --dsinks) passes, under
  // "dsinks" with one row per head; the planted mistake, dσ with its sign flipped, fails
  // at exactly the heads whose dσ is not 0; without --sinks it is refused (exit 2).
  write_npy(path("do.npy"), uniform_tensor({kB, kHq, kLq, kD}, 31));
  const std::string mods = " --sinks " + path("sinks.npy") + " --softcap 2";
  attend("ds", "--dout " + path("do.npy") + " --dq " + path("dq.npy") + " --dsinks " +
                   path("ds.npy") + mods);
  const std::string grads =
      " --dout " + path("do.npy") + " --candidate-dq " + path("dq.npy") + " --candidate-dsinks ";
  nlohmann::json j = check("o_ds.npy", "lse_ds.npy", mods + grads + path("ds.npy"), 0);
  EXPECT_EQ(j["gradient_oracle"], "b1_dense_masked_grad");
  EXPECT_TRUE(j["dsinks"]["pass"].get<bool>());
  EXPECT_EQ(j["dsinks"]["rows_are"], "head");
  EXPECT_EQ(j["dsinks"]["num_elements"], kHq);
  Tensor<double> ds = read_npy_float(path("ds.npy"), "ds");
  ASSERT_EQ(ds.shape, Shape({kHq}));
  for (double& x : ds.data) {
    ASSERT_NE(x, 0.0);  // every head's sink takes a share of some row
    x = -x;
  }
  write_npy(path("ds_neg.npy"), ds);
  j = check("o_ds.npy", "lse_ds.npy", mods + grads + path("ds_neg.npy"), 1);
  EXPECT_TRUE(j["dq"]["pass"].get<bool>());
  EXPECT_FALSE(j["dsinks"]["pass"].get<bool>());
  EXPECT_EQ(j["dsinks"]["num_mismatched"], kHq);
  for (int64_t h = 0; h < kHq; ++h) EXPECT_EQ(j["dsinks"]["rows"]["0," + std::to_string(h)], "0");
  const RunResult r = run("check " + qkv() + " --candidate " + path("o_ds.npy") + " " + kPattern +
                          grads + path("ds.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("invalid --candidate-dsinks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("needs --sinks S.npy"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
