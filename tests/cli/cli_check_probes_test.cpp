// Checks contract §4.9's cause probes at real sizes and the probes added with them: each
// test plants one mistake in a candidate computed by the tests' own attention
// (cli_harness.h), runs `check`, and requires the report to name it. Also contract §5.2's
// shape errors that are conventions (a forgotten --layout bshd with lse given, grouped-query
// attention) and §4.9's peer hint only where that peer could have produced the case.
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class CheckProbes : public CliTest {
 protected:
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
  // Writes o.npy (and lse.npy) of the tests' attention under `allowed`, default scale.
  void candidate(const Allowed& allowed) {
    std::vector<double> o, lse;
    independent_attention(q_, k_, v_, d_, 1.0 / std::sqrt(double(d_.D)), allowed, o, lse);
    o_ = Tensor<double>({d_.B, d_.H, d_.Lq, d_.Dv});
    o_.data = o;
    lse_ = Tensor<double>({d_.B, d_.H, d_.Lq});
    lse_.data = lse;
    write_npy(path("o.npy"), o_);
    write_npy(path("lse.npy"), lse_);
  }
  nlohmann::json check(const std::string& extra, int want_exit) {
    last_ = run("check " + qkv() + " --candidate " + path("o.npy") + " " + extra);
    EXPECT_EQ(last_.exit_code, want_exit) << last_.out << last_.err;
    return last_.exit_code <= 1 ? nlohmann::json::parse(last_.out) : nlohmann::json();
  }
  std::string cause(const nlohmann::json& j) const { return j.at("probable_cause").get<std::string>(); }
  // The probes ran under the default budget and it left none out.
  static void within_budget(const nlohmann::json& j) {
    EXPECT_EQ(j["probes"]["mode"], "auto");
    EXPECT_EQ(j["probes"]["budget_s"], 5.0);
    EXPECT_FALSE(j["probes"].contains("not_run")) << j["probes"].dump();
  }
  static Tensor<double> bshd(const Tensor<double>& x) {
    const int64_t B = x.shape[0], H = x.shape[1], L = x.shape[2], D = x.shape[3];
    Tensor<double> y({B, L, H, D});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t e = 0; e < D; ++e)
            y.data[((b * L + l) * H + h) * D + e] = x.data[((b * H + h) * L + l) * D + e];
    return y;
  }
  Dims d_{};
  Tensor<double> q_, k_, v_, o_, lse_;
  RunResult last_;
  // One head of head_dim 64 at n = 4096 (n = 16384 is timed in docs/numerics.md).
  static constexpr int64_t n_ = 4096;
  const Dims big_{1, 1, n_, n_, 64, 64};
};

TEST_F(CheckProbes, WindowOneWiderIsNamedAtN4096) {
  write_inputs(big_);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return std::abs(i - j) <= 9; });
  const nlohmann::json j = check("--pattern window --window 8", 1);
  EXPECT_EQ(cause(j), "window one wider (candidate matches --window 9)");
  within_budget(j);
  check("--pattern window --window 9", 0);
}

// contract §3.3: a (left, right) window off by one on one side, or read the other way round.
TEST_F(CheckProbes, WindowPairOffByOneOrSwappedIsNamed) {
  write_inputs(Dims{1, 2, 300, 300, 16, 16});
  // (L, R) = (5, 2) computed as (5, 3): the right side one wider.
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return j >= i - 5 && j <= i + 3; });
  nlohmann::json j = check("--pattern window --window-left 5 --window-right 2", 1);
  EXPECT_EQ(cause(j), "window_right one wider (candidate matches --window-left 5 --window-right 3)");
  check("--pattern window --window-left 5 --window-right 3", 0);
  // Swapped: the candidate looked 2 back and 5 ahead.
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return j >= i - 2 && j <= i + 5; });
  j = check("--pattern window --window-left 5 --window-right 2", 1);
  EXPECT_EQ(cause(j), "window sides swapped (candidate matches --window-left 2 --window-right 5)");
  // One narrower on the left.
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return j >= i - 4 && j <= i + 2; });
  j = check("--pattern window --window-left 5 --window-right 2", 1);
  EXPECT_EQ(cause(j), "window_left one narrower (candidate matches --window-left 4 --window-right 2)");
}

TEST_F(CheckProbes, GlobalTokensIgnoringCausalityAreNamedAtN4096) {
  write_inputs(big_);
  auto g = [](int64_t x) { return x == 0 || x == 1000 || x == 3000; };
  // Causal band, but the global rows see every key and every query every global key.
  candidate([g](int64_t, int64_t, int64_t i, int64_t j) {
    return (j <= i && i - j <= 8) || g(i) || g(j);
  });
  const nlohmann::json j = check("--pattern longformer --causal --window 8 --global 0,1000,3000", 1);
  EXPECT_EQ(cause(j).rfind("global tokens ignore causality", 0), 0u) << cause(j);
  within_budget(j);
  EXPECT_FALSE(j.contains("hint")) << j["hint"];  // HF Longformer has no causal mask
}

TEST_F(CheckProbes, WindowClippedOneShortAtTheSequenceEndIsNamedAtN4096) {
  write_inputs(big_);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return std::abs(i - j) <= 8 && j <= n_ - 2;  // the last key never attended
  });
  const nlohmann::json j = check("--pattern window --window 8", 1);
  EXPECT_EQ(cause(j).rfind("window clipped one short at the sequence end", 0), 0u) << cause(j);
  EXPECT_EQ(j["o"]["rows"]["0,0"], "4087-4095");
  within_budget(j);
}

TEST_F(CheckProbes, MissingDiagonalIsNamedAtN4096) {
  write_inputs(big_);
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return std::abs(i - j) <= 8 && i != j; });
  const nlohmann::json j = check("--pattern window --window 8", 1);
  EXPECT_EQ(cause(j).rfind("diagonal missing", 0), 0u) << cause(j);
  within_budget(j);
}

TEST_F(CheckProbes, PaddedKeysAttendedAreNamedAtN4096) {
  write_inputs(big_);
  Tensor<uint8_t> pad({1, n_}, 1);
  for (int64_t j = n_ - 100; j < n_; ++j) pad.data[j] = 0;
  write_npy(path("pad.npy"), pad, true);
  // Real queries attend the padded keys; padded query rows are zero (as contract §2.4).
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return i < n_ - 100 && std::abs(i - j) <= 8;
  });
  const nlohmann::json j = check("--pattern window --window 8 --key-padding-mask " + path("pad.npy"), 1);
  EXPECT_EQ(cause(j).rfind("padded keys attended", 0), 0u) << cause(j);
  EXPECT_EQ(j["o"]["rows"]["0,0"], "3988-3995");
  within_budget(j);
}

TEST_F(CheckProbes, TopLeftNonCausalWindowIsNamedUnderTheDefault) {
  write_inputs(Dims{1, 2, 40, 64, 8, 8});
  candidate([](int64_t, int64_t, int64_t i, int64_t j) { return std::abs(i - j) <= 3; });
  const nlohmann::json j = check("--pattern window --window 3", 1);
  EXPECT_EQ(cause(j).rfind("query positions aligned top-left", 0), 0u) << cause(j);
  check("--pattern window --window 3 --causal-align top-left", 0);
}

TEST_F(CheckProbes, BottomRightCausalWindowIsNamedUnderTopLeft) {
  write_inputs(Dims{1, 2, 40, 64, 8, 8});
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    const int64_t p = i + 64 - 40;  // bottom-right: query i at key position i + Lk - Lq
    return j <= p && p - j <= 3;
  });
  const nlohmann::json j = check("--pattern window --window 3 --causal --causal-align top-left", 1);
  EXPECT_EQ(cause(j).rfind("query positions aligned bottom-right", 0), 0u) << cause(j);
  check("--pattern window --window 3 --causal", 0);
}

TEST_F(CheckProbes, LongformerHfHintOnlyWhereHfCouldHaveProducedTheCase) {
  write_inputs(Dims{1, 1, 40, 40, 8, 8});
  auto lf = [](int64_t w, bool causal) {
    return [w, causal](int64_t, int64_t, int64_t i, int64_t j) {
      return (!causal || j <= i) && (std::abs(i - j) <= w || i == 0 || j == 0);
    };
  };
  // Causal: HF Longformer is an encoder, it has no causal mask.
  candidate(lf(3, true));
  nlohmann::json j = check("--pattern longformer --causal --window 4 --global 0", 1);
  EXPECT_FALSE(j.contains("hint")) << j["hint"];
  // Not causal, an even window: HF's attention_window 4 is --window 2.
  candidate(lf(3, false));
  j = check("--pattern longformer --window 4 --global 0", 1);
  ASSERT_TRUE(j.contains("hint"));
  EXPECT_NE(j["hint"].get<std::string>().find("--attention-window 4 means --window 2"),
            std::string::npos) << j["hint"];
  // Not causal, odd window, one batch element: nothing HF does explains it.
  candidate(lf(2, false));
  j = check("--pattern longformer --window 3 --global 0", 1);
  EXPECT_FALSE(j.contains("hint")) << j["hint"];
}

TEST_F(CheckProbes, ForgottenLayoutBshdWithLseGivenSaysDidYouMean) {
  write_inputs(Dims{1, 4, 64, 64, 8, 8});
  candidate([](int64_t, int64_t, int64_t, int64_t) { return true; });
  // FlashAttention's files: q/k/v/o [batch, seq_len, num_heads, d], lse [batch, heads, seq_len].
  write_npy(path("q.npy"), bshd(q_));
  write_npy(path("k.npy"), bshd(k_));
  write_npy(path("v.npy"), bshd(v_));
  write_npy(path("o.npy"), bshd(o_));
  const std::string lse = " --candidate-lse " + path("lse.npy");
  check(lse, 2);
  EXPECT_NE(last_.err.find("invalid --candidate-lse shape"), std::string::npos) << last_.err;
  EXPECT_NE(last_.err.find("did you mean --layout bshd?"), std::string::npos) << last_.err;
  EXPECT_EQ(last_.err.find('\n'), last_.err.size() - 1) << last_.err;  // one line
  check(lse + " --layout bshd", 0);
  // A random table of [num_heads, nb - 2, r] likewise.
  Tensor<int64_t> table({4, 6, 1});  // 8 blocks of 8 tokens: query blocks 1..6 draw one each
  for (int64_t e = 0; e < table.numel(); ++e) table.data[e] = (e % 6 + 4) % 8;
  write_npy(path("table.npy"), table);
  const std::string bb = " --pattern bigbird --block-size 8 --random-table " + path("table.npy");
  check(bb, 2);
  EXPECT_NE(last_.err.find("did you mean --layout bshd?"), std::string::npos) << last_.err;
}

TEST_F(CheckProbes, GroupedQueryAttentionIsNamed) {
  // k and v with 2 heads under q's 4 are grouped-query attention (contract §2.7): the check
  // runs. The tests' own GQA (query head h reads k/v head h / 2) passes; zeros fail.
  write_inputs(Dims{1, 4, 32, 32, 8, 8});
  const Tensor<double> k2 = uniform_tensor({1, 2, 32, 8}, 2), v2 = uniform_tensor({1, 2, 32, 8}, 3);
  write_npy(path("k.npy"), k2);
  write_npy(path("v.npy"), v2);
  Tensor<double> o({1, 4, 32, 8}, 0.0);
  write_npy(path("o.npy"), o);
  check("", 1);
  for (int64_t h = 0; h < 4; ++h) {
    Dims one{1, 1, 32, 32, 8, 8};
    Tensor<double> qh({1, 1, 32, 8}), kh({1, 1, 32, 8}), vh({1, 1, 32, 8});
    std::copy_n(q_.ptr() + h * 256, 256, qh.ptr());
    std::copy_n(k2.ptr() + (h / 2) * 256, 256, kh.ptr());
    std::copy_n(v2.ptr() + (h / 2) * 256, 256, vh.ptr());
    std::vector<double> oh, lh;
    independent_attention(qh, kh, vh, one, 1.0 / std::sqrt(8.0),
                          [](int64_t, int64_t, int64_t, int64_t) { return true; }, oh, lh);
    std::copy(oh.begin(), oh.end(), o.ptr() + h * 256);
  }
  write_npy(path("o.npy"), o);
  EXPECT_EQ(check("", 0)["shape"]["num_kv_heads"], 2);
  // Heads that do not group (4 over 3) are refused, and the hint says why.
  write_npy(path("k.npy"), uniform_tensor({1, 3, 32, 8}, 2));
  write_npy(path("v.npy"), uniform_tensor({1, 3, 32, 8}, 3));
  check("", 2);
  EXPECT_NE(last_.err.find("invalid k num_heads = 3: must divide q num_heads (4)"),
            std::string::npos) << last_.err;
  EXPECT_NE(last_.err.find("grouped-query attention needs q's heads to be a whole multiple"),
            std::string::npos) << last_.err;
  // The same tensors as [batch, seq_len, num_heads, d] read bhsd look like cross-attention
  // of 4 queries over 2 keys: the check runs, fails, and the layout probe names both.
  write_npy(path("q.npy"), bshd(q_));
  write_npy(path("k.npy"), bshd(k2));
  write_npy(path("v.npy"), bshd(v2));
  write_npy(path("o.npy"), bshd(o));
  const nlohmann::json j = check("", 1);
  EXPECT_NE(cause(j).find("grouped-query attention (q has 4 heads, k and v 2): pass --layout bshd"),
            std::string::npos) << cause(j);
}

TEST_F(CheckProbes, BigBirdLastBlockWrongIsNotRandomBlocks) {
  write_inputs(Dims{1, 1, 32, 32, 4, 4});
  const std::string bb = " --pattern bigbird --block-size 4 --num-random-blocks 1 --seed 0";
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("o.npy") + bb).exit_code, 0);
  Tensor<double> o = read_npy_float(path("o.npy"), "o");
  for (int64_t e = 28 * 4; e < 32 * 4; ++e) o.data[e] += 1.0;  // rows 28-31: the last block
  write_npy(path("o.npy"), o);
  const nlohmann::json j = check(bb, 1);
  EXPECT_EQ(j["o"]["rows"]["0,0"], "28-31");
  EXPECT_EQ(cause(j).find("random blocks differ"), std::string::npos) << cause(j);
  EXPECT_EQ(cause(j).rfind("unknown", 0), 0u) << cause(j);
  // One row of a middle block wrong: a local error, not other random blocks (those change
  // every row of a query block).
  for (int64_t e = 28 * 4; e < 32 * 4; ++e) o.data[e] -= 1.0;
  for (int64_t e = 13 * 4; e < 14 * 4; ++e) o.data[e] += 1.0;
  write_npy(path("o.npy"), o);
  const nlohmann::json m = check(bb, 1);
  EXPECT_EQ(m["o"]["rows"]["0,0"], "13");
  EXPECT_EQ(cause(m).find("random blocks differ"), std::string::npos) << cause(m);
}

TEST_F(CheckProbes, WorstRowNamesTheSmallestKeySetThatExplainsIt) {
  write_inputs(Dims{1, 1, 512, 512, 8, 8});
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return std::abs(i - j) <= 4 && !(i == 300 && (j == 296 || j == 297));
  });
  const nlohmann::json j = check("--pattern window --window 4", 1);
  EXPECT_EQ(j["o"]["rows"]["0,0"], "300");
  const nlohmann::json& w = j["probes"]["worst_row_keys"];
  EXPECT_EQ(w["text"], "row 300 (batch 0, head 0) matches if keys 296-297 are removed");
  EXPECT_EQ(w["removed"], "296-297");
  EXPECT_EQ(w["added"], "");
  EXPECT_NE(cause(j).find("row 300 (batch 0, head 0) matches if keys 296-297 are removed"),
            std::string::npos) << cause(j);
  // A key added far from the band: one key.
  candidate([](int64_t, int64_t, int64_t i, int64_t j) {
    return std::abs(i - j) <= 4 || (i == 300 && j == 17);
  });
  EXPECT_EQ(check("--pattern window --window 4", 1)["probes"]["worst_row_keys"]["text"],
            "row 300 (batch 0, head 0) matches if key 17 is added");
}

TEST_F(CheckProbes, ProbesRunAtSizesThatUsedToSkipThemAndTheBudgetSaysWhatWasLeft) {
  write_inputs(Dims{1, 1, 2000, 2000, 8, 8});  // 6.4e7 multiply-adds: once above the limit
  ASSERT_EQ(run("attend " + qkv() + " --out " + path("o.npy") + " --pattern window --window 4")
                .exit_code, 0);
  Tensor<double> o = read_npy_float(path("o.npy"), "o");
  o.data[1234 * 8 + 3] += 1.0;
  write_npy(path("o.npy"), o);
  nlohmann::json j = check("--pattern window --window 4", 1);
  EXPECT_EQ(cause(j).rfind("unknown: no probe matched", 0), 0u) << cause(j);
  EXPECT_GT(j["probes"]["tried"].size(), 5u);
  EXPECT_EQ(j["o"]["rows"]["0,0"], "1234");
  EXPECT_EQ(j["probes"]["worst_row_keys"]["text"],
            "no change of at most two ranges of keys explains row 1234 (batch 0, head 0)");
  // A budget spent before the first probe: every probe is listed as not run.
  j = check("--pattern window --window 4 --probe-budget 1e-9", 1);
  EXPECT_TRUE(j["probes"]["tried"].empty());
  EXPECT_GT(j["probes"]["not_run"].size(), 5u);
  EXPECT_NE(cause(j).find("within the probe budget"), std::string::npos) << cause(j);
  j = check("--pattern window --window 4 --probes never", 1);
  EXPECT_EQ(cause(j), "unknown: probes not run (--probes never)");
  j = check("--pattern window --window 4 --probes always", 1);
  EXPECT_EQ(j["probes"]["mode"], "always");
  for (const char* bad : {"--probes sometimes", "--probe-budget 0", "--probe-budget nan",
                          "--probe-budget -1"}) {
    check(std::string("--pattern window --window 4 ") + bad, 2);
    EXPECT_NE(last_.err.find(std::string(bad).substr(0, std::string(bad).find(' '))),
              std::string::npos) << last_.err;
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
