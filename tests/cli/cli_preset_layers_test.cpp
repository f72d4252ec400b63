// Serves contract §6.4 and docs/models.md: `attend`, `check` and `mask` with `--preset NAME
// --layer L` run that layer of the model — its pattern, scale and softcap — exactly as the
// same call with the explicit flags does (the output files equal byte for byte), on the
// model's real num_heads, num_kv_heads and head_dim at a short seq_len; every refusal
// (a flag the preset fixes, a wrong head count or head_dim, sinks missing or extra, an
// unknown preset, a layer out of range) exits 2 with one line naming the argument and
// writes no file.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class CliPresetLayers : public CliTest {
 protected:
  // q [1, hq, n, d], k and v [1, hkv, n, d] under the given prefix.
  void write_qkv(const std::string& tag, int64_t hq, int64_t hkv, int64_t n, int64_t d) {
    Tensor<double> q = uniform_tensor({1, hq, n, d}, 31);
    for (double& x : q.data) x *= 8.0;  // scores large enough for a softcap to matter
    write_npy(path(tag + "_q.npy"), q);
    write_npy(path(tag + "_k.npy"), uniform_tensor({1, hkv, n, d}, 32));
    write_npy(path(tag + "_v.npy"), uniform_tensor({1, hkv, n, d}, 33));
  }
  std::string qkv(const std::string& tag) const {
    return "--q " + path(tag + "_q.npy") + " --k " + path(tag + "_k.npy") + " --v " +
           path(tag + "_v.npy");
  }
  // attend twice — by preset and by the explicit flags — and require equal files.
  void expect_same_as_flags(const std::string& tag, const std::string& preset_flags,
                     const std::string& explicit_flags) {
    const std::string a = "attend " + qkv(tag) + " --dtype float64 ";
    RunResult r = run(a + "--out " + path(tag + "_o1.npy") + " --lse " + path(tag + "_l1.npy") +
                      " " + preset_flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run(a + "--out " + path(tag + "_o2.npy") + " --lse " + path(tag + "_l2.npy") + " " +
            explicit_flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(slurp(path(tag + "_o1.npy")), slurp(path(tag + "_o2.npy"))) << preset_flags;
    EXPECT_EQ(slurp(path(tag + "_l1.npy")), slurp(path(tag + "_l2.npy"))) << preset_flags;
    // check of the preset's own output against the oracle of the preset passes, and the
    // explicit-flag check reports the same JSON.
    const std::string c = "check " + qkv(tag) + " --candidate " + path(tag + "_o1.npy") +
                          " --candidate-lse " + path(tag + "_l1.npy") + " ";
    const RunResult c1 = run(c + preset_flags), c2 = run(c + explicit_flags);
    ASSERT_EQ(c1.exit_code, 0) << c1.err << c1.out;
    EXPECT_EQ(c1.out, c2.out);
    EXPECT_TRUE(nlohmann::json::parse(c1.out)["pass"].get<bool>());
  }
  void expect_refused(const std::string& args, const std::string& needle) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(exists("refused_o.npy")) << args;
  }
};

// Gemma 2: 16 query heads over 8 kv heads, head_dim 256, scale 1/16, softcap 50; layer 0 a
// causal window 4095 (all of 48 tokens), layer 1 dense causal.
TEST_F(CliPresetLayers, Gemma2LayersEqualTheirFlags) {
  write_qkv("g2", 16, 8, 48, 256);
  expect_same_as_flags("g2", "--preset gemma-2-9b --layer 0",
                "--pattern window --window 4095 --causal --scale 0.0625 --softcap 50");
  expect_same_as_flags("g2", "--preset gemma-2-9b --layer 41",
                "--pattern dense --causal --scale 0.0625 --softcap 50");
}

// Mistral's causal window 4096 at 64 tokens, 32 over 8 heads, head_dim 128, scale 1/sqrt(128).
TEST_F(CliPresetLayers, MistralLayerEqualsItsFlags) {
  write_qkv("mi", 32, 8, 32, 128);
  expect_same_as_flags("mi", "--preset mistral-7b-v0.1 --layer 31",
                "--pattern window --window 4096 --causal --scale 0.08838834764831845");
}

// Llama 4 Scout: the chunked layers (chunk 8192: one chunk at 16 tokens; still the chunked
// kind) and the global ones.
TEST_F(CliPresetLayers, Llama4ChunkedLayerEqualsItsFlags) {
  write_qkv("ll", 40, 8, 16, 128);
  expect_same_as_flags("ll", "--preset llama-4-scout --layer 0",
                "--pattern chunked --chunk-size 8192 --causal --scale 0.08838834764831845");
  expect_same_as_flags("ll", "--preset llama-4-scout --layer 3",
                "--pattern dense --causal --scale 0.08838834764831845");
}

// gpt-oss: sinks are required (values from the caller), 64 over 8 heads, head_dim 64.
TEST_F(CliPresetLayers, GptOssNeedsSinks) {
  write_qkv("go", 64, 8, 16, 64);
  Tensor<double> sinks({64});
  for (int64_t h = 0; h < 64; ++h) sinks.data[h] = 0.1 * static_cast<double>(h % 7) - 0.3;
  write_npy(path("go_sinks.npy"), sinks);
  const std::string s = " --sinks " + path("go_sinks.npy");
  expect_same_as_flags("go", "--preset gpt-oss-20b --layer 0" + s,
                "--pattern window --window 127 --causal --scale 0.125" + s);
  expect_same_as_flags("go", "--preset gpt-oss-20b --layer 1" + s,
                "--pattern dense --causal --scale 0.125" + s);
  const std::string a = "attend " + qkv("go") + " --out " + path("refused_o.npy") + " ";
  expect_refused(a + "--preset gpt-oss-20b --layer 0", "invalid --sinks = missing");
}

// The preset's scale and softcap are what check's oracle uses: a candidate computed with the
// default scale 1/sqrt(head_dim) = 1/16 but no softcap fails Gemma 2's layer 0.
TEST_F(CliPresetLayers, CheckUsesThePresetsScoreParameters) {
  write_qkv("g2", 16, 8, 24, 256);
  RunResult r = run("attend " + qkv("g2") + " --dtype float64 --out " + path("g2_nocap.npy") +
                    " --pattern window --window 4095 --causal --scale 0.0625");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("check " + qkv("g2") + " --candidate " + path("g2_nocap.npy") +
          " --preset gemma-2-9b --layer 0");
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["pass"].get<bool>());
}

// --layout bshd, and files of rank 3 ([L, H, D]): the heads are read where the layout puts them.
TEST_F(CliPresetLayers, BshdFilesOfAnyRank) {
  const int64_t n = 16, d = 64;
  Tensor<double> q = uniform_tensor({n, 64, d}, 41), k = uniform_tensor({n, 8, d}, 42),
                 v = uniform_tensor({n, 8, d}, 43);
  write_npy(path("b_q.npy"), q);
  write_npy(path("b_k.npy"), k);
  write_npy(path("b_v.npy"), v);
  Tensor<double> sinks({64});
  write_npy(path("b_s.npy"), sinks);
  const std::string a = "attend " + qkv("b") + " --layout bshd --sinks " + path("b_s.npy") +
                        " --dtype float64 --out ";
  RunResult r = run(a + path("b_o1.npy") + " --preset gpt-oss-20b --layer 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run(a + path("b_o2.npy") + " --pattern dense --causal --scale 0.125");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(path("b_o1.npy")), slurp(path("b_o2.npy")));
  // bhsd reads the same files as 16 heads of 64 tokens: refused, naming q's heads.
  expect_refused("attend " + qkv("b") + " --sinks " + path("b_s.npy") + " --out " +
                     path("refused_o.npy") + " --preset gpt-oss-20b --layer 1",
                 "invalid --q heads = 16");
}

TEST_F(CliPresetLayers, MaskEqualsItsFlags) {
  RunResult r = run("mask --seq-len 40 --out " + path("m1.npy") + " --preset llama-4-scout --layer 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("mask --seq-len 40 --out " + path("m2.npy") + " --pattern chunked --chunk-size 8192 --causal");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(path("m1.npy")), slurp(path("m2.npy")));
  r = run("mask --seq-len 40 --out " + path("m3.npy") + " --preset gemma-3-12b --layer 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("mask --seq-len 40 --out " + path("m4.npy") + " --pattern window --window 1023 --causal");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(path("m3.npy")), slurp(path("m4.npy")));
  expect_refused("mask --seq-len 40 --out " + path("refused_o.npy") +
                     " --preset gemma-3-12b --layer 0 --num-heads 2",
                 "invalid --num-heads");
}

TEST_F(CliPresetLayers, Refusals) {
  write_qkv("g2", 16, 8, 16, 256);
  write_qkv("bad", 8, 8, 16, 256);
  write_qkv("badk", 16, 4, 16, 256);
  write_qkv("badd", 16, 8, 16, 128);
  const auto a = [this](const std::string& tag) {
    return "attend " + qkv(tag) + " --out " + path("refused_o.npy") + " ";
  };
  const std::string g = "--preset gemma-2-9b --layer 0";
  expect_refused(a("g2") + g + " --scale 0.1", "invalid --scale = given");
  expect_refused(a("g2") + g + " --softcap 30", "invalid --softcap = given");
  expect_refused(a("g2") + g + " --window 3", "invalid --window = given");
  expect_refused(a("g2") + g + " --pattern dense", "invalid --pattern = given");
  expect_refused(a("g2") + g + " --chunk-size 4", "invalid --chunk-size = given");
  expect_refused(a("g2") + g + " --attention-window 8", "invalid --attention-window = given");
  expect_refused(a("bad") + g, "invalid --q heads = 8");
  expect_refused(a("bad") + g, "must be the preset's num_heads 16");
  expect_refused(a("badk") + g, "invalid --k heads = 4");
  expect_refused(a("badk") + g, "num_kv_heads 8");
  expect_refused(a("badd") + g, "invalid --q head_dim = 128");
  expect_refused(a("badd") + g, "head_dim 256");
  expect_refused(a("g2") + "--preset gemma-2-9b --layer 42", "must be in [0, 42)");
  expect_refused(a("g2") + "--preset gemma-2-9b --layer -1", "must be in [0, 42)");
  expect_refused(a("g2") + "--preset gemma-2-9b", "invalid --layer = missing");
  expect_refused(a("g2") + "--layer 1 --pattern dense", "invalid --layer = 1");
  expect_refused(a("g2") + "--preset gemma-9 --layer 0",
                 "must be one of: bigbird-roberta-base, deepseek-v3.2,");
  expect_refused(a("g2") + "--preset phi-3-small --layer 0",
                 "needs the block-sparse with vertical stride pattern kind");
  Tensor<double> sinks({16});
  write_npy(path("sinks16.npy"), sinks);
  expect_refused(a("g2") + g + " --sinks " + path("sinks16.npy"), "invalid --sinks");
  const std::string c = "check " + qkv("g2") + " --candidate " + path("g2_q.npy") + " ";
  expect_refused(c + g + " --scale 0.1", "invalid --scale = given");
  expect_refused(c + "--preset gemma-2-9b --layer 99", "must be in [0, 42)");
}

}  // namespace
}  // namespace sparseattn::testing_cli
