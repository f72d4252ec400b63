// Checks contract §3.12 (compatibility modes): the stored HuggingFace fixtures
// (tests/fixtures/peers, written by tools/make_peer_fixtures.py from transformers 5.24) are
// reproduced within float32 tolerance by `check` and `attend` under --compat hf-bigbird and
// the Longformer flags, and `check` WITHOUT those flags fails exactly where the peer's
// convention differs from contract §2.2 / §3.4 (repeated blocks; global projections;
// per-batch globals). docs/peers.md records the conventions and the measured errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

const std::string kDir = PEERS_DIR;

std::string fx(const std::string& name, const std::string& what) {
  return kDir + "/" + name + "_" + what + ".npy";
}

// q/k/v and candidate o of one fixture.
std::string qkvo(const std::string& name) {
  return "--q " + fx(name, "q") + " --k " + fx(name, "k") + " --v " + fx(name, "v") +
         " --candidate " + fx(name, "o");
}

std::string bigbird_flags(const std::string& name) {
  return " --pattern bigbird --block-size 16 --random-table " + fx(name, "rand_attn") +
         " --key-padding-mask " + fx(name, "key_padding_mask");
}

std::string longformer_flags(const std::string& name) {
  return " --pattern longformer --attention-window 8 --key-padding-mask " +
         fx(name, "key_padding_mask");
}

std::string globals(const std::string& name) {
  return " --global-mask " + fx(name, "global_mask") + " --q-global " + fx(name, "q_global") +
         " --k-global " + fx(name, "k_global") + " --v-global " + fx(name, "v_global");
}

class PeersTest : public CliTest {
 protected:
  // Runs `check`; returns the report's max abs error of o, asserting the exit code.
  std::string hint;  // the last report's "hint" ("" when none)
  double check(const std::string& args, int want_exit) {
    const RunResult r = run("check " + args);
    hint.clear();
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    if (r.exit_code > 1) return -1.0;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["pass"].get<bool>(), want_exit == 0) << r.out;
    if (j.contains("hint")) hint = j["hint"].get<std::string>();
    return j["o"]["max_abs_error"].get<double>();
  }
};

// HF BigBird, every fixture: the listing (repeats counted) reproduces HF's float32 output.
TEST_F(PeersTest, HfBigBirdCompatReproducesTrainEvalAndPadding) {
  for (const char* name : {"bigbird_train_256", "bigbird_eval_256", "bigbird_train_1024"}) {
    SCOPED_TRACE(name);
    const double err = check(qkvo(name) + bigbird_flags(name) + " --compat hf-bigbird", 0);
    EXPECT_LT(err, 1e-6);  // measured 1e-8 .. 5e-8: HF's float32 rounding only
  }
}

// Without --compat, set semantics (contract §2.2) agrees where HF lists no block twice
// (train mode, 256 tokens: draws from blocks 1..9, none a neighbour or global) and fails
// where it does (eval mode: block 0 listed 1 + r times; 1024 tokens: the last block drawn).
TEST_F(PeersTest, SetSemanticsFailsExactlyWhereHfRepeatsBlocks) {
  EXPECT_LT(check(qkvo("bigbird_train_256") + bigbird_flags("bigbird_train_256"), 0), 1e-6);
  EXPECT_EQ(hint, "");  // a pass has no hint
  EXPECT_GT(check(qkvo("bigbird_eval_256") + bigbird_flags("bigbird_eval_256"), 1), 1e-3);
  // The report names the convention: every failing row is in a block HF lists twice.
  EXPECT_NE(hint.find("names a key block twice"), std::string::npos) << hint;
  EXPECT_NE(hint.find("--compat hf-bigbird"), std::string::npos) << hint;
  EXPECT_GT(check(qkvo("bigbird_train_1024") + bigbird_flags("bigbird_train_1024"), 1), 1e-4);
  EXPECT_NE(hint.find("--compat hf-bigbird"), std::string::npos) << hint;
}

// HF Longformer: per-batch globals ({0,17} and {0,5,40}), separate global projections,
// 10 padded tokens in batch element 1, attention_window 8 (W = 4).
TEST_F(PeersTest, LongformerGlobalsAndProjectionsReproduceHf) {
  const std::string n = "longformer_64";
  EXPECT_LT(check(qkvo(n) + longformer_flags(n) + globals(n), 0), 1e-6);
  // The global rows from q, k, v instead of the global projections: fails.
  EXPECT_GT(check(qkvo(n) + longformer_flags(n) + " --global-mask " + fx(n, "global_mask"), 1), 1e-3);
  EXPECT_NE(hint.find("only rows of global queries differ"), std::string::npos) << hint;
  EXPECT_NE(hint.find("--q-global"), std::string::npos) << hint;
  // One global set for the whole batch (batch element 0's): fails on batch element 1.
  EXPECT_GT(check(qkvo(n) + longformer_flags(n) + " --global 0,17", 1), 1e-3);
  EXPECT_NE(hint.find("--global-mask"), std::string::npos) << hint;
  // --attention-window is the total width: --window 8 (one-sided) is a different pattern.
  EXPECT_GT(check(qkvo(n) + " --pattern longformer --window 8 --key-padding-mask " +
                      fx(n, "key_padding_mask") + globals(n), 1), 1e-4);
}

// The optimized paths serve the modes too: attend's float32 outputs pass `check`.
TEST_F(PeersTest, OptimizedCpuKernelsServeTheModes) {
  const std::string b = "bigbird_eval_256";
  RunResult r = run("attend --q " + fx(b, "q") + " --k " + fx(b, "k") + " --v " + fx(b, "v") +
                    " --out " + path("o_bb.npy") + " --lse " + path("lse_bb.npy") +
                    " --impl cpu_k07_hf_listing --dtype float32" + bigbird_flags(b) +
                    " --compat hf-bigbird");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult c = run("check --q " + fx(b, "q") + " --k " + fx(b, "k") + " --v " + fx(b, "v") +
                    " --candidate " + path("o_bb.npy") + " --candidate-lse " + path("lse_bb.npy") +
                    bigbird_flags(b) + " --compat hf-bigbird");
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  // Padded query rows (batch 1, last 40 tokens): lse = -inf, o = 0 (contract §2.3).
  EXPECT_NE(c.out.find("\"pass\": true"), std::string::npos) << c.out;

  const std::string l = "longformer_64";
  r = run("attend --q " + fx(l, "q") + " --k " + fx(l, "k") + " --v " + fx(l, "v") + " --out " +
          path("o_lf.npy") + " --impl cpu_k04_longformer --dtype float32" + longformer_flags(l) +
          globals(l));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  c = run("check --q " + fx(l, "q") + " --k " + fx(l, "k") + " --v " + fx(l, "v") +
          " --candidate " + path("o_lf.npy") + longformer_flags(l) + globals(l));
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  // And against the HF output directly.
  c = run("check --q " + fx(l, "q") + " --k " + fx(l, "k") + " --v " + fx(l, "v") +
          " --candidate " + fx(l, "o") + longformer_flags(l) + globals(l));
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
}

// `mask --global-mask` writes one longformer pattern per batch element: batch element b's
// planes equal `mask --global <row b>` with row b's padding (pattern and padding built
// independently by the plain flags).
TEST_F(PeersTest, MaskTakesPerBatchGlobals) {
  const std::string l = "longformer_64";
  RunResult r = run("mask --seq-len 64 --num-heads 2 --pattern longformer --attention-window 8"
                    " --global-mask " + fx(l, "global_mask") + " --key-padding-mask " +
                    fx(l, "key_padding_mask") + " --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<uint8_t> got = read_npy_mask(path("m.npy"), "m");
  ASSERT_EQ(got.shape, (Shape{2, 2, 64, 64}));
  const Tensor<uint8_t> pad = read_npy_mask(fx(l, "key_padding_mask"), "pad");
  const char* globals_of[2] = {"0,17", "0,5,40"};  // the fixture's manifest
  for (int64_t b = 0; b < 2; ++b) {
    r = run(std::string("mask --seq-len 64 --pattern longformer --window 4 --global ") +
            globals_of[b] + " --out " + path("one.npy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Tensor<uint8_t> one = read_npy_mask(path("one.npy"), "one");
    int64_t differ = 0;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 64; ++i)
        for (int64_t j = 0; j < 64; ++j) {
          const bool want = one.data[i * 64 + j] && pad.data[b * 64 + i] && pad.data[b * 64 + j];
          differ += (got.data[((b * 2 + h) * 64 + i) * 64 + j] != 0) != want;
        }
    EXPECT_EQ(differ, 0) << "batch element " << b;
  }
  // A global query of batch element 0 (17) is local in batch element 1.
  int64_t row17_b0 = 0, row17_b1 = 0;
  for (int64_t j = 0; j < 64; ++j) {
    row17_b0 += got.data[(0 * 64 + 17) * 64 + j];
    row17_b1 += got.data[((2 * 1) * 64 + 17) * 64 + j];
  }
  EXPECT_EQ(row17_b0, 64);
  EXPECT_EQ(row17_b1, 9 + 3);  // window 17-4..17+4 and the globals 0, 5, 40
}

// Bad combinations are argument errors (exit 2) naming the flag.
TEST_F(PeersTest, BadCompatInputsAreRefused) {
  const std::string b = "bigbird_eval_256";
  RunResult r = run("check " + qkvo(b) + " --pattern bigbird --block-size 16 --compat hf-bigbird");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--random-table"), std::string::npos) << r.err;
  r = run("check " + qkvo(b) + bigbird_flags(b) + " --compat hf-longformer");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--compat"), std::string::npos) << r.err;
  const std::string l = "longformer_64";
  r = run("check " + qkvo(l) + " --pattern longformer --attention-window 7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--attention-window"), std::string::npos) << r.err;
  r = run("check " + qkvo(l) + " --pattern longformer --attention-window 8 --window 4");
  EXPECT_EQ(r.exit_code, 2);
  r = run("check " + qkvo(l) + longformer_flags(l) + " --q-global " + fx(l, "q_global"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--q-global"), std::string::npos) << r.err;
  r = run("check " + qkvo(l) + " --pattern window --window 4 --global-mask " + fx(l, "global_mask"));
  EXPECT_EQ(r.exit_code, 2);
}

// Under the compatibility flags the explaining report (contract §4.9) still locates a
// failure against the mode's oracle; the probes, which re-run the normal oracle, are
// skipped and say so; the reference-error rule is refused.
TEST_F(PeersTest, CompatFailuresAreLocatedAndProbesSkipped) {
  const std::string n = "longformer_64";
  const RunResult r = run("check " + qkvo(n) + longformer_flags(n) + globals(n) + " --scale 0.25");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["pass"].get<bool>());
  EXPECT_TRUE(j["global_projections"].get<bool>());
  EXPECT_FALSE(j["o"]["rows"].empty()) << r.out;       // failing rows, per batch and head
  EXPECT_TRUE(j["o"].contains("worst_row")) << r.out;
  EXPECT_GT(j["o"]["error_over_tolerance"].get<double>(), 1.0);
  EXPECT_EQ(j["probable_cause"], "unknown: probes skipped");
  EXPECT_NE(j["probes"]["skipped"].get<std::string>().find("compatibility"), std::string::npos);
  EXPECT_FALSE(j.contains("hint"));  // the projections were given: nothing to suggest
  EXPECT_NE(r.err.find("probable cause: unknown: probes skipped"), std::string::npos) << r.err;
  const RunResult rule = run("check " + qkvo(n) + longformer_flags(n) + globals(n) +
                             " --tolerance-rule reference-error");
  EXPECT_EQ(rule.exit_code, 2) << rule.out;
  EXPECT_NE(rule.err.find("--tolerance-rule"), std::string::npos) << rule.err;
  // --global-mask without the projections: the text summary carries the convention hint.
  const RunResult text = run("check " + qkvo(n) + longformer_flags(n) + " --global-mask " +
                             fx(n, "global_mask") + " --format text");
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_NE(text.out.find("convention hint: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--q-global"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace sparseattn::testing_cli
