// Checks contract §1.6 (convention flags of `attend` and `mask`) and §3.10 (random draws
// exported with `mask --random-table-out` and read back with --random-table, BigBird and
// token level; §3.11 num_random beyond the keys): each flag's
// output against the tests' own attention (cli_harness.h) or the default's output
// rearranged by hand.
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class Conventions : public CliTest {
 protected:
  void write_qkv(const Dims& d) {
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
  Tensor<double> attend(const std::string& flags, const std::string& o = "o.npy",
                        const std::string& lse = "lse.npy") {
    const RunResult r = run("attend " + qkv() + " --out " + path(o) + " --lse " + path(lse) +
                            " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_npy_float(path(o), "o");
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
  Tensor<double> q_, k_, v_;
};

TEST_F(Conventions, AttendLayoutBshdReadsAndWritesSeqLenBeforeHeads) {
  write_qkv(Dims{2, 3, 10, 10, 4, 5});
  const Tensor<double> o = attend("--pattern window --window 2");
  const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
  write_npy(path("q.npy"), bshd(q_));
  write_npy(path("k.npy"), bshd(k_));
  write_npy(path("v.npy"), bshd(v_));
  const Tensor<double> ob = attend("--pattern window --window 2 --layout bshd", "ob.npy", "lb.npy");
  EXPECT_EQ(ob.shape, (Shape{2, 10, 3, 5}));
  EXPECT_EQ(ob.data, bshd(o).data);
  const Tensor<double> lb = read_npy_float(path("lb.npy"), "lse");
  EXPECT_EQ(lb.shape, (Shape{2, 3, 10}));  // lse stays [batch, num_heads, seq_len_q]
  EXPECT_EQ(lb.data, lse.data);
}

TEST_F(Conventions, AttendLseBase2IsTheNaturalLseOverLn2) {
  write_qkv(Dims{1, 2, 9, 9, 4, 4});
  attend("--pattern window --window 1");
  const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
  attend("--pattern window --window 1 --lse-base 2", "o2.npy", "l2.npy");
  const Tensor<double> l2 = read_npy_float(path("l2.npy"), "lse");
  for (int64_t e = 0; e < lse.numel(); ++e)
    EXPECT_NEAR(l2.data[e], lse.data[e] / std::log(2.0), 1e-14);
}

TEST_F(Conventions, AttendTopLeftCausalPutsQueryIAtKeyI) {
  const Dims d{1, 2, 5, 12, 4, 4};
  write_qkv(d);
  const Tensor<double> o = attend("--pattern window --window 2 --causal --causal-align top-left");
  std::vector<double> want, lse;
  independent_attention(q_, k_, v_, d, 0.5,
                        [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i && j >= i - 2; },
                        want, lse);
  ASSERT_EQ(o.numel(), static_cast<int64_t>(want.size()));
  for (size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(o.data[e], want[e], 1e-12);
  const RunResult c = run("check " + qkv() + " --candidate " + path("o.npy") +
                          " --pattern window --window 2 --causal");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("--causal-align top-left"), std::string::npos) << c.out;
}

// Top-left causal with L_q != L_k keeps the key padding (the rebuilt pattern must carry it):
// q [1, 1, 3, 2] = 0 (every score 0), k/v [1, 1, 5, 2], v_j = (j, 10 j), key 0 padded. Query
// i sits at key position i: query 0 sees only the padded key 0 (o = 0, lse = -inf), query 1
// key 1 alone (o = v_1, lse = 0), query 2 keys 1-2 (o = the mean of v_1, v_2, lse = ln 2).
TEST_F(Conventions, TopLeftCausalKeepsTheKeyPaddingExactly) {
  write_npy(path("q.npy"), Tensor<double>({1, 1, 3, 2}, 0.0));
  write_npy(path("k.npy"), Tensor<double>({1, 1, 5, 2}, 0.0));
  Tensor<double> v({1, 1, 5, 2});
  for (int64_t j = 0; j < 5; ++j) v.data[j * 2] = j, v.data[j * 2 + 1] = 10.0 * j;
  write_npy(path("v.npy"), v);
  Tensor<uint8_t> pad({1, 5}, 1);
  pad.data[0] = 0;
  write_npy(path("pad.npy"), pad, true);
  const std::string flags = "--causal --causal-align top-left --key-padding-mask " + path("pad.npy");
  const Tensor<double> o = attend(flags);
  const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
  EXPECT_EQ(o.data, (std::vector<double>{0.0, 0.0, 1.0, 10.0, 1.5, 15.0}));
  EXPECT_EQ(lse.data[0], -INFINITY);
  EXPECT_EQ(lse.data[1], 0.0);
  EXPECT_NEAR(lse.data[2], std::log(2.0), 1e-15);
  ASSERT_EQ(run("mask --seq-len 3 --seq-len-k 5 " + flags + " --out " + path("m.npy")).exit_code, 0);
  EXPECT_EQ(read_npy_mask(path("m.npy"), "mask").data,
            (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0}));
}

TEST_F(Conventions, KeyPaddingPolarityIgnoreIsTheInvertedMask) {
  write_qkv(Dims{2, 1, 8, 8, 3, 3});
  Tensor<uint8_t> keep({2, 8}, 1), ignore({2, 8}, 0);
  for (int64_t j = 5; j < 8; ++j) keep.data[j] = 0, ignore.data[j] = 1;
  write_npy(path("keep.npy"), keep, true);
  write_npy(path("ignore.npy"), ignore, true);
  const Tensor<double> a = attend("--key-padding-mask " + path("keep.npy"));
  const Tensor<double> b = attend("--key-padding-mask " + path("ignore.npy") +
                                  " --key-padding-polarity ignore", "o2.npy", "l2.npy");
  EXPECT_EQ(a.data, b.data);
  ASSERT_EQ(run("mask --seq-len 8 --out " + path("m1.npy") + " --key-padding-mask " +
                path("keep.npy")).exit_code, 0);
  ASSERT_EQ(run("mask --seq-len 8 --out " + path("m2.npy") + " --key-padding-mask " +
                path("ignore.npy") + " --key-padding-polarity ignore").exit_code, 0);
  EXPECT_EQ(slurp(path("m1.npy")), slurp(path("m2.npy")));
}

TEST_F(Conventions, MaskedScoreGivesFullyMaskedRowsTheMeanOfVAndCheckAgrees) {
  write_qkv(Dims{2, 1, 6, 6, 3, 2});
  Tensor<uint8_t> pad({2, 6}, 1);
  for (int64_t j = 0; j < 6; ++j) pad.data[6 + j] = 0;  // batch 1 fully padded
  write_npy(path("pad.npy"), pad, true);
  const std::string flags = "--key-padding-mask " + path("pad.npy") + " --masked-score -1e9";
  const Tensor<double> o = attend(flags);
  const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t e = 0; e < 2; ++e) {
      double m = 0.0;
      for (int64_t j = 0; j < 6; ++j) m += v_.data[(6 + j) * 2 + e];
      EXPECT_NEAR(o.data[(6 + i) * 2 + e], m / 6, 1e-15);
    }
    EXPECT_NEAR(lse.data[6 + i], -1e9 + std::log(6.0), 1e-6);
  }
  EXPECT_EQ(run("check " + qkv() + " --candidate " + path("o.npy") + " --candidate-lse " +
                path("lse.npy") + " " + flags).exit_code, 0);
  EXPECT_EQ(run("attend " + qkv() + " --out " + path("x.npy") + " --impl cpu_k06_generic_tiles " +
                flags).exit_code, 2);
}

TEST_F(Conventions, BigBirdRandomTableRoundTrips) {
  const std::string base = "mask --seq-len 30 --num-heads 3 --pattern bigbird --block-size 4 ";
  const RunResult r = run(base + "--num-random-blocks 2 --seed 7 --out " + path("m.npy") +
                          " --random-table-out " + path("t.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<int64_t> t = read_npy_int(path("t.npy"), "table");
  EXPECT_EQ(t.shape, (Shape{3, 6, 2}));  // nb = 8 blocks, query blocks 1..6, r = 2
  for (int64_t x : t.data) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 8);
  }
  // Read back under another seed: the table, not the seed, decides.
  ASSERT_EQ(run(base + "--seed 99 --out " + path("m2.npy") + " --random-table " + path("t.npy"))
                .exit_code, 0);
  EXPECT_EQ(slurp(path("m.npy")), slurp(path("m2.npy")));
  ASSERT_EQ(run(base + "--num-random-blocks 2 --seed 99 --out " + path("m3.npy")).exit_code, 0);
  EXPECT_NE(slurp(path("m.npy")), slurp(path("m3.npy"))) << "seed 99 must draw differently";
  // bigbird-etc exports [num_heads, nb, r]: (30 - 2 global) / 4 = 7 blocks.
  ASSERT_EQ(run("mask --seq-len 30 --num-heads 3 --pattern bigbird-etc --block-size 4 "
                "--num-random-blocks 1 --num-global-tokens 2 --seed 7 --out " + path("e.npy") +
                " --random-table-out " + path("te.npy")).exit_code, 0);
  EXPECT_EQ(read_npy_int(path("te.npy"), "table").shape, (Shape{3, 7, 1}));
  ASSERT_EQ(run("mask --seq-len 30 --num-heads 3 --pattern bigbird-etc --block-size 4 "
                "--num-global-tokens 2 --seed 99 --out " + path("e2.npy") + " --random-table " +
                path("te.npy")).exit_code, 0);
  EXPECT_EQ(slurp(path("e.npy")), slurp(path("e2.npy")));
}

// Fewer blocks than r remain (nb = 5: query block 2 may draw only blocks it does not
// already see): the exported table holds -1 for the draws that could not be made, and
// reading it back gives the same mask and the same shortfall.
TEST_F(Conventions, RandomTableWithShortfallRoundTrips) {
  const std::string base = "--seq-len 20 --pattern bigbird --block-size 4 ";
  ASSERT_EQ(run("mask " + base + "--num-random-blocks 3 --seed 3 --out " + path("m.npy") +
                " --random-table-out " + path("t.npy")).exit_code, 0);
  const Tensor<int64_t> t = read_npy_int(path("t.npy"), "table");
  int64_t minus_one = 0;
  for (int64_t x : t.data) minus_one += x == -1;
  ASSERT_GT(minus_one, 0) << "the case must have a shortfall to test";
  ASSERT_EQ(run("mask " + base + "--out " + path("m2.npy") + " --random-table " + path("t.npy"))
                .exit_code, 0);
  EXPECT_EQ(slurp(path("m.npy")), slurp(path("m2.npy")));
  const auto info = [&](const std::string& table) {
    const RunResult r = run("info " + base + "--json " + table);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("random_shortfall").get<int64_t>();
  };
  EXPECT_EQ(info("--num-random-blocks 3 --seed 3"), minus_one);
  EXPECT_EQ(info("--random-table " + path("t.npy")), minus_one);
}

TEST_F(Conventions, TokenRandomTableNamesEveryRandomKey) {
  const RunResult r = run("mask --seq-len 20 --num-heads 2 --pattern random --num-random 3 "
                          "--seed 5 --out " + path("m.npy") + " --random-table-out " + path("t.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<int64_t> t = read_npy_int(path("t.npy"), "table");
  ASSERT_EQ(t.shape, (Shape{2, 20, 3}));
  const Tensor<uint8_t> m = read_npy_mask(path("m.npy"), "mask");  // [2, 20, 20]
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 20; ++i)
      for (int64_t x = 0; x < 3; ++x) {
        const int64_t j = t.data[(h * 20 + i) * 3 + x];
        ASSERT_GE(j, -1);
        ASSERT_LT(j, 20);
        if (j >= 0) EXPECT_EQ(m.data[(h * 20 + i) * 20 + j], 1) << h << " " << i << " " << j;
      }
  const RunResult info = run("info --seq-len 20 --num-heads 2 --pattern random --num-random 3 --json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["random_draws_shape"], nlohmann::json({2, 20, 3}));
  EXPECT_NE(j["random_draws_layout"].get<std::string>().find("--random-table-out"), std::string::npos);
  EXPECT_EQ(run("mask --seq-len 20 --out " + path("x.npy") + " --random-table-out " +
                path("y.npy")).exit_code, 2);  // dense draws nothing
}

// contract §3.10: a token-level table read back gives the same mask and shortfall under any
// seed — causal, L_q > L_k (queries before the first key: rows of -1), a global query (no
// candidates: -1), more draws than candidates; and its keys are exactly the listed ones.
TEST_F(Conventions, TokenRandomTableRoundTripsWithShortfall) {
  const std::string base = "--seq-len 12 --seq-len-k 6 --num-heads 3 --pattern random --window 1 "
                           "--causal --global 2 ";
  ASSERT_EQ(run("mask " + base + "--num-random 5 --seed 5 --out " + path("m.npy") +
                " --random-table-out " + path("t.npy")).exit_code, 0);
  const Tensor<int64_t> t = read_npy_int(path("t.npy"), "table");
  ASSERT_EQ(t.shape, (Shape{3, 12, 5}));
  int64_t minus_one = 0;
  for (int64_t x : t.data) minus_one += x == -1;
  // Queries 0..5 sit before key 0: 6 rows x 5 draws x 3 heads are -1, and more besides.
  ASSERT_GT(minus_one, 6 * 5 * 3);
  const RunResult back = run("mask " + base + "--seed 99 --out " + path("m2.npy") +
                             " --random-table " + path("t.npy"));
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(slurp(path("m.npy")), slurp(path("m2.npy")));
  const auto info = [&](const std::string& extra) {
    const RunResult r = run("info " + base + "--json " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  EXPECT_EQ(info("--num-random 5 --seed 5")["random_shortfall"], minus_one);
  EXPECT_EQ(info("--random-table " + path("t.npy"))["random_shortfall"], minus_one);
  EXPECT_NE(info("--random-table " + path("t.npy"))["pattern"].get<std::string>().find(
                "random_table=[3, 12, 5]"), std::string::npos);
}

// A hand-written table, broadcast over heads ([1, L_q, r]): query i attends its window
// (0 here) and exactly the listed keys; a key listed twice or inside the window counts once.
TEST_F(Conventions, TokenRandomTableListsExactlyItsKeys) {
  Tensor<int64_t> t({1, 3, 2}, -1);
  t.data = {4, 4, 0, -1, 2, 5};  // query 0: key 4 twice; query 1: key 0; query 2: itself, 5
  write_npy(path("t.npy"), t);
  const RunResult r = run("mask --seq-len 3 --seq-len-k 6 --num-heads 2 --pattern random "
                          "--window 0 --random-table " + path("t.npy") + " --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Query i sits at i + 3: window 0 is key i + 3.
  const std::vector<uint8_t> head = {0, 0, 0, 1, 1, 0,   // keys 3, 4
                                     1, 0, 0, 0, 1, 0,   // keys 0, 4
                                     0, 0, 1, 0, 0, 1};  // keys 2, 5
  std::vector<uint8_t> want = head;
  want.insert(want.end(), head.begin(), head.end());
  EXPECT_EQ(read_npy_mask(path("m.npy"), "mask").data, want);
  const RunResult i = run("info --seq-len 3 --seq-len-k 6 --num-heads 2 --pattern random --window 0 "
                          "--json --random-table " + path("t.npy"));
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_EQ(nlohmann::json::parse(i.out)["random_shortfall"], 2);  // one -1, for each head
  // Refused, naming the flag: a key beyond the sequence, a future key under causal, a table
  // of the wrong shape, --num-random other than 0 or r.
  Tensor<int64_t> beyond = t, future = t;
  beyond.data[0] = 6;
  future.data[3] = 5;  // query 1 sits at 4: key 5 is after it
  write_npy(path("beyond.npy"), beyond);
  write_npy(path("future.npy"), future);
  write_npy(path("shape.npy"), Tensor<int64_t>({1, 2, 2}, 0));
  for (const std::string& bad :
       {"--random-table " + path("beyond.npy"), "--causal --random-table " + path("future.npy"),
        "--random-table " + path("shape.npy"), "--num-random 3 --random-table " + path("t.npy")}) {
    const RunResult b = run("mask --seq-len 3 --seq-len-k 6 --pattern random --window 0 " + bad +
                            " --out " + path("bad.npy"));
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_EQ(b.err.rfind("sparseattn: error: invalid --", 0), 0u) << b.err;
    EXPECT_FALSE(exists("bad.npy"));
  }
}

// contract §3.11 at the edge: num_random beyond the keys takes every candidate — with
// window 0 every query of seq_len_q 2, seq_len_k 8 attends all 8 keys (one draw each short).
TEST_F(Conventions, NumRandomBeyondTheKeysTakesEveryKey) {
  ASSERT_EQ(run("mask --seq-len 2 --seq-len-k 8 --pattern random --window 0 --num-random 8 --out " +
                path("m.npy")).exit_code, 0);
  EXPECT_EQ(read_npy_mask(path("m.npy"), "mask").data, std::vector<uint8_t>(16, 1));
  const RunResult i = run("info --seq-len 2 --seq-len-k 8 --pattern random --window 0 "
                          "--num-random 8 --json");
  EXPECT_EQ(nlohmann::json::parse(i.out)["random_shortfall"], 2);  // 7 candidates, 8 draws
}

// A flag with no effect is an error (contract §5.1): attend writes every row, so
// --padded-queries any (check's "do not compare them") is refused, naming it.
TEST_F(Conventions, AttendRefusesPaddedQueriesAny) {
  write_qkv(Dims{1, 1, 4, 4, 2, 2});
  const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --padded-queries any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("sparseattn: error: invalid --padded-queries = any: ", 0), 0u) << r.err;
  EXPECT_FALSE(exists("o.npy"));
  EXPECT_EQ(run("attend " + qkv() + " --out " + path("o.npy") + " --padded-queries zero").exit_code, 0);
}

}  // namespace
}  // namespace sparseattn::testing_cli
