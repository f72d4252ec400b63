// Serves contract §6.4 and docs/models.md: `reach --preset` answers the receptive-field
// questions by the formulas docs/models.md derives by hand, `info --preset` gives the cost
// formulas, and bad input (unknown preset, --layer out of range, a preset with the pattern
// flags it fixes, a preset whose pattern kind is missing) exits 2 with one line.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace sparseattn::testing_cli {
namespace {

class CliModels : public CliTest {
 protected:
  nlohmann::json reach(const std::string& preset, int64_t n) {
    const RunResult r = run("reach --preset " + preset + " --seq-len " + std::to_string(n) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  nlohmann::json info(const std::string& preset, int64_t n) {
    const RunResult r = run("info --preset " + preset + " --seq-len " + std::to_string(n) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Ordered pairs (j, i) with 0 <= i - j <= r (a causal reach of r back), over n tokens.
double causal_pairs(int64_t n, int64_t r) {
  r = std::min(r, n - 1);
  return static_cast<double>(n) * static_cast<double>(r + 1) -
         static_cast<double>(r) * static_cast<double>(r + 1) / 2.0;
}

// docs/models.md, Mistral: a causal window W = 4096 (keys i - W .. i) on all 32 layers; the
// last query reaches token 0 at depth ceil((n - 1) / W), and after depth d the connected
// pairs are those with 0 <= i - j <= d * W.
TEST_F(CliModels, MistralWindowOverLayers) {
  for (const int64_t n : {2, 4097, 4098, 8193, 100000, 131072, 131073}) {
    const nlohmann::json r = reach("mistral-7b-v0.1", n);
    const int64_t depth = ceil_div(n - 1, 4096);
    EXPECT_EQ(r["first_reach_depth"].get<int64_t>(), depth) << n;
    EXPECT_EQ(r["first_reach_within_stack"].get<bool>(), depth <= 32) << n;
    for (int64_t d = 1; d <= 32; ++d)
      EXPECT_DOUBLE_EQ(r["layers"][d - 1]["connected_fraction"].get<double>(),
                       causal_pairs(n, d * 4096) / (static_cast<double>(n) * n)) << n << " d " << d;
  }
  EXPECT_EQ(reach("mistral-7b-v0.1", 131072)["first_reach_depth"], 32);  // Mistral's 32 x 4096
}

// gpt-oss: window 127 (keys i - 127 .. i) on even layers, dense causal on odd ones: depth 1
// when n - 1 <= 127, else 2; after layer 1 the pairs with i - j <= 127, after layer 2 every
// causal pair.
TEST_F(CliModels, GptOssAlternatingWindowAndDense) {
  for (const int64_t n : {100, 128, 129, 4096, 131072}) {
    const nlohmann::json r = reach("gpt-oss-20b", n);
    EXPECT_EQ(r["first_reach_depth"].get<int64_t>(), n - 1 <= 127 ? 1 : 2) << n;
    const double n2 = static_cast<double>(n) * n;
    EXPECT_DOUBLE_EQ(r["layers"][0]["connected_fraction"].get<double>(), causal_pairs(n, 127) / n2);
    for (int64_t d = 2; d <= 24; ++d)
      EXPECT_DOUBLE_EQ(r["layers"][d - 1]["connected_fraction"].get<double>(),
                       causal_pairs(n, n - 1) / n2);
    EXPECT_TRUE(r["mixing_depth"].is_null());  // causal: never mixes
  }
}

// Gemma 3: five local layers of window 1023 (keys i - 1023 .. i), then a global one: depth
// ceil((n - 1) / 1023) when that is <= 5, else 6.
TEST_F(CliModels, Gemma3FiveLocalPerGlobal) {
  for (const int64_t n : {1024, 1025, 4096, 5116, 5117, 8192, 131072}) {
    const nlohmann::json r = reach("gemma-3-12b", n);
    const int64_t local = ceil_div(n - 1, 1023);
    EXPECT_EQ(r["first_reach_depth"].get<int64_t>(), local <= 5 ? local : 6) << n;
    const double n2 = static_cast<double>(n) * n;
    for (int64_t d = 1; d <= 5; ++d)
      EXPECT_DOUBLE_EQ(r["layers"][d - 1]["connected_fraction"].get<double>(),
                       causal_pairs(n, d * 1023) / n2) << n << " d " << d;
    EXPECT_DOUBLE_EQ(r["layers"][5]["connected_fraction"].get<double>(), causal_pairs(n, n - 1) / n2);
  }
}

// ModernBERT: layer 0 is global (0 % 3 == 0) and bidirectional: everything connects after
// one layer (depth 1, mixing depth 1, fraction 1); the local layers (window 64 each side)
// would alone need ceil((n - 1) / 64) layers.
TEST_F(CliModels, ModernBertOneGlobalInThree) {
  for (const int64_t n : {65, 1000, 8192}) {
    const nlohmann::json r = reach("modernbert-base", n);
    EXPECT_EQ(r["first_reach_depth"].get<int64_t>(), 1);
    EXPECT_EQ(r["mixing_depth"].get<int64_t>(), 1);
    EXPECT_DOUBLE_EQ(r["layers"][0]["connected_fraction"].get<double>(), 1.0);
    EXPECT_EQ(r["never_connected"].get<int64_t>(), 0);
  }
}

// info: FLOPs 4 * nnz * head_dim * num_heads; KV cache 2 * num_kv_heads * head_dim * 2 bytes
// per kept token (a window of 127 keeps 128 tokens); speedup bound = all-dense / preset.
TEST_F(CliModels, InfoCostsOfGptOss) {
  const int64_t n = 131072;
  const nlohmann::json r = info("gpt-oss-20b", n);
  const double per_pair = 4.0 * 64 * 64, dense = causal_pairs(n, n - 1), window = causal_pairs(n, 127);
  ASSERT_EQ(r["layers"].size(), 24u);
  EXPECT_DOUBLE_EQ(r["layers"][0]["flops"].get<double>(), per_pair * window);
  EXPECT_DOUBLE_EQ(r["layers"][1]["flops"].get<double>(), per_pair * dense);
  EXPECT_EQ(r["layers"][0]["kv_cache_tokens"].get<int64_t>(), 128);
  EXPECT_EQ(r["layers"][1]["kv_cache_tokens"].get<int64_t>(), n);
  const double per_token = 2.0 * 8 * 64 * 2;
  EXPECT_DOUBLE_EQ(r["total"]["kv_cache_bytes"].get<double>(), 12 * per_token * (128 + n));
  EXPECT_DOUBLE_EQ(r["total"]["speedup_bound"].get<double>(), 24 * dense / (12 * (dense + window)));
  const nlohmann::json e = info("modernbert-base", 8192);  // an encoder keeps no cache
  EXPECT_TRUE(e["total"]["kv_cache_bytes"].is_null());
}

TEST_F(CliModels, ModelsListsEveryPreset) {
  const RunResult r = run("models");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"mistral-7b-v0.1", "gemma-2-9b", "gemma-3-12b", "gpt-oss-20b",
                           "modernbert-base", "llama-4-scout", "phi-3-small",
                           "longformer-base-4096", "bigbird-roberta-base", "deepseek-v3.2"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  EXPECT_NE(r.out.find("(local x5, global) x8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(global, local x2) x7 + global"), std::string::npos) << r.out;
}

// Llama 4 Scout (docs/models.md): three causal chunked layers (chunk 8192), then a dense
// causal one. Chunked layers never cross a chunk boundary, so the last query reaches token 0
// at depth 1 when n <= 8192, else only at the first global layer, depth 4. After layers 1-3
// the pairs are the causal pairs inside each chunk (c(c + 1)/2 per chunk of c tokens), the
// last query covering its own chunk; from layer 4 on every causal pair.
TEST_F(CliModels, Llama4ChunkedThenGlobal) {
  for (const int64_t n : {100, 8192, 8193, 20000, 131072}) {
    const nlohmann::json r = reach("llama-4-scout", n);
    EXPECT_EQ(r["engine"].get<std::string>().rfind("interval", 0), 0u) << r["engine"];
    EXPECT_EQ(r["first_reach_depth"].get<int64_t>(), n <= 8192 ? 1 : 4) << n;
    const double n2 = static_cast<double>(n) * n;
    double in_chunks = 0;
    for (int64_t start = 0; start < n; start += 8192) {
      const double c = static_cast<double>(std::min<int64_t>(8192, n - start));
      in_chunks += c * (c + 1) / 2;
    }
    const int64_t last_chunk = (n - 1) % 8192 + 1;
    for (int64_t d = 1; d <= 48; ++d) {
      const bool chunked_only = d <= 3;
      EXPECT_DOUBLE_EQ(r["layers"][d - 1]["connected_fraction"].get<double>(),
                       (chunked_only ? in_chunks : causal_pairs(n, n - 1)) / n2) << n << " d " << d;
      EXPECT_EQ(r["layers"][d - 1]["last_query_coverage"].get<int64_t>(),
                chunked_only ? last_chunk : n) << n << " d " << d;
    }
    // info: a chunked layer's keys are the causal pairs of its chunks; its KV cache is one chunk.
    const nlohmann::json c = info("llama-4-scout", n);
    EXPECT_DOUBLE_EQ(c["layers"][0]["flops"].get<double>(), 4.0 * 128 * 40 * in_chunks) << n;
    EXPECT_EQ(c["layers"][0]["kv_cache_tokens"].get<int64_t>(), std::min<int64_t>(n, 8192)) << n;
    EXPECT_EQ(c["layers"][3]["kv_cache_tokens"].get<int64_t>(), n) << n;
  }
}

// One line, exit 2, nothing on stdout.
void expect_refused(const RunResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST_F(CliModels, BadInput) {
  expect_refused(run("reach --preset gpt-oss --seq-len 64"),
                 "invalid --preset = gpt-oss: must be one of: bigbird-roberta-base, deepseek-v3.2,");
  expect_refused(run("info --preset gpt-oss-20b --seq-len 64 --layer 24"),
                 "invalid --layer = 24: must be in [0, 24) for gpt-oss-20b");
  expect_refused(run("info --preset gpt-oss-20b --seq-len 64 --layer -1"), "must be in [0, 24)");
  expect_refused(run("reach --preset gpt-oss-20b --seq-len 64 --window 3"),
                 "invalid --window = given: --preset gpt-oss-20b fixes");
  expect_refused(run("reach --preset gpt-oss-20b --seq-len 64 --layers 3"), "invalid --layers");
  expect_refused(run("info --preset gpt-oss-20b --seq-len 64 --num-heads 3"), "invalid --num-heads");
  expect_refused(run("info --seq-len 64 --layer 1"), "invalid --layer = 1");
  expect_refused(run("info --preset phi-3-small --seq-len 64"),
                 "needs the block-sparse with vertical stride pattern kind");
  expect_refused(run("reach --preset deepseek-v3.2 --seq-len 64"), "needs the select pattern kind");
}

}  // namespace
}  // namespace sparseattn::testing_cli
