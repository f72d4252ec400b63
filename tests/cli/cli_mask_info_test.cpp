// Checks contract §3 (every pattern kind) and §3.13 (one source) through `mask` and `info`.
// `sparseattn mask` writes exactly the library's dense_mask for every pattern kind (the
// flags reach the one pattern source unchanged), and for the token-level kinds it also
// equals a predicate written here from contract §3. `sparseattn info` reports the pattern's
// own statistics.
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"
#include "pattern/pattern.h"

namespace sparseattn::testing_cli {
namespace {

class Mask : public CliTest {
 protected:
  // Runs `mask` and compares with dense_mask() of materialize(spec, sizes), head by head,
  // key padding applied as contract §2 says. Returns the mask read back.
  Tensor<uint8_t> expect_mask_matches(const std::string& flags, const PatternSpec& spec,
                                      PatternSizes sizes) {
    const RunResult r = run("mask --out " + path("m.npy") + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return {};
    const Tensor<uint8_t> got = read_npy_mask(path("m.npy"), "mask");
    const Pattern p = materialize(spec, sizes);
    const int64_t n = sizes.seq_len_q, m = sizes.seq_len_k;
    Shape want_shape = {n, m};
    if (sizes.num_heads > 1 || sizes.batch > 1) want_shape.insert(want_shape.begin(), sizes.num_heads);
    if (sizes.batch > 1) want_shape.insert(want_shape.begin(), sizes.batch);
    EXPECT_EQ(got.shape, want_shape);
    if (got.shape != want_shape) return got;
    int64_t mismatches = 0;
    for (int64_t b = 0; b < sizes.batch; ++b)
      for (int64_t h = 0; h < sizes.num_heads; ++h) {
        const Tensor<uint8_t> head = dense_mask(p.head(h));
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < m; ++j) {
            const bool want = head.data[i * m + j] && p.query_valid(b, i) && p.key_valid(b, j);
            mismatches += got.data[((b * sizes.num_heads + h) * n + i) * m + j] != want;
          }
      }
    EXPECT_EQ(mismatches, 0) << flags;
    return got;
  }
};

PatternSizes sizes_of(int64_t heads, int64_t n, int64_t m = 0) {
  return PatternSizes{1, heads, n, m ? m : n};
}

TEST_F(Mask, DenseAndCausal) {
  PatternSpec s;
  expect_mask_matches("--seq-len 7", s, sizes_of(1, 7));
  s.causal = true;
  const Tensor<uint8_t> m = expect_mask_matches("--seq-len 7 --causal", s, sizes_of(1, 7));
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(m.data[i * 7 + j], j <= i);
}

TEST_F(Mask, DilatedWindowEqualsTheSpecPredicate) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = 2;
  s.dilation = 3;
  const Tensor<uint8_t> m = expect_mask_matches(
      "--seq-len 23 --num-heads 2 --pattern window --window 2 --dilation 3", s, sizes_of(2, 23));
  for (int64_t i = 0; i < 23; ++i)
    for (int64_t j = 0; j < 23; ++j) {
      const int64_t delta = j - i;
      const bool want = delta % 3 == 0 && std::abs(delta) <= 6;
      EXPECT_EQ(m.data[23 * 23 + i * 23 + j], want) << i << "," << j;  // head 1
    }
}

// contract §3.3, §3.14, §3.15: the new flags reach the pattern unchanged, and the masks
// are the hand-computed ones.
TEST_F(Mask, ModernKindsFromTheirFlags) {
  PatternSpec w;
  w.kind = PatternKind::window;
  w.window_left = 1;
  w.window_right = 2;
  const Tensor<uint8_t> a = expect_mask_matches(
      "--seq-len 5 --pattern window --window-left 1 --window-right 2", w, sizes_of(1, 5));
  const std::vector<uint8_t> want_w = {1, 1, 1, 0, 0,  1, 1, 1, 1, 0,  0, 1, 1, 1, 1,
                                       0, 0, 1, 1, 1,  0, 0, 0, 1, 1};
  EXPECT_EQ(a.data, want_w);
  PatternSpec c;
  c.kind = PatternKind::chunked;
  c.chunk_size = 2;
  c.causal = true;
  const Tensor<uint8_t> b =
      expect_mask_matches("--seq-len 5 --pattern chunked --chunk-size 2 --causal", c, sizes_of(1, 5));
  const std::vector<uint8_t> want_c = {1, 0, 0, 0, 0,  1, 1, 0, 0, 0,  0, 0, 1, 0, 0,
                                       0, 0, 1, 1, 0,  0, 0, 0, 0, 1};
  EXPECT_EQ(b.data, want_c);
  PatternSpec n;
  n.kind = PatternKind::neighborhood;
  n.kernel_size = 3;
  const Tensor<uint8_t> m =
      expect_mask_matches("--seq-len 5 --pattern neighborhood --kernel-size 3", n, sizes_of(1, 5));
  const std::vector<uint8_t> want_n = {1, 1, 1, 0, 0,  1, 1, 1, 0, 0,  0, 1, 1, 1, 0,
                                       0, 0, 1, 1, 1,  0, 0, 1, 1, 1};
  EXPECT_EQ(m.data, want_n);
  n.dilation = 2;
  n.causal = true;
  expect_mask_matches("--seq-len 9 --seq-len-k 13 --num-heads 2 --pattern neighborhood "
                      "--kernel-size 3 --dilation 2 --causal",
                      n, sizes_of(2, 9, 13));
  // A pattern file's keys are the flags' names.
  std::ofstream(path("p.json")) << R"({"pattern": "window", "window_left": -1, "window_right": 0})";
  PatternSpec causal;
  causal.causal = true;
  expect_mask_matches("--seq-len 6 --pattern-file " + path("p.json"), causal, sizes_of(1, 6));
}

TEST_F(Mask, CausalWindowWithMoreKeysThanQueriesAlignsBottomRight) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = 1;
  s.causal = true;
  const Tensor<uint8_t> m = expect_mask_matches(
      "--seq-len 3 --seq-len-k 8 --pattern window --window 1 --causal", s, sizes_of(1, 3, 8));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t p = i + 5;
      EXPECT_EQ(m.data[i * 8 + j], j == p || j == p - 1) << i << "," << j;
    }
}

TEST_F(Mask, LongformerGlobalRowsAndColumnsAreFull) {
  PatternSpec s;
  s.kind = PatternKind::longformer;
  s.window = 1;
  s.global = {0, 9};
  const Tensor<uint8_t> m = expect_mask_matches(
      "--seq-len 12 --pattern longformer --window 1 --global 0,9", s, sizes_of(1, 12));
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 12; ++j) {
      const bool want = std::abs(i - j) <= 1 || i == 0 || i == 9 || j == 0 || j == 9;
      EXPECT_EQ(m.data[i * 12 + j], want) << i << "," << j;
    }
}

TEST_F(Mask, RandomKeysFollowTheSeed) {
  PatternSpec s;
  s.kind = PatternKind::random;
  s.window = 1;
  s.num_random = 3;
  s.seed = 17;
  const Tensor<uint8_t> a = expect_mask_matches(
      "--seq-len 30 --num-heads 2 --pattern random --window 1 --num-random 3 --seed 17", s,
      sizes_of(2, 30));
  for (int64_t i = 0; i < 30; ++i) {  // 3 window keys (fewer at the ends) + 3 random
    int64_t count = 0;
    for (int64_t j = 0; j < 30; ++j) count += a.data[i * 30 + j];
    EXPECT_EQ(count, (i == 0 || i == 29 ? 2 : 3) + 3) << "row " << i;
  }
}

TEST_F(Mask, BigBirdWithSeedAndWithAnExplicitRandomTable) {
  PatternSpec s;
  s.kind = PatternKind::bigbird;
  s.block_size = 4;
  s.num_random_blocks = 1;
  s.seed = 5;
  // 22 tokens: 5 full blocks of 4 and a partial block of 2.
  expect_mask_matches("--seq-len 22 --num-heads 3 --pattern bigbird --block-size 4 "
                      "--num-random-blocks 1 --seed 5",
                      s, sizes_of(3, 22));
  // Query blocks 1..4 of each head take the table's key block (nb = 6, table [1, 4, 1]).
  Tensor<int64_t> table({1, 4, 1}, 0);
  table.data = {4, 5, 0, 1};
  write_npy(path("table.npy"), table);
  PatternSpec t = s;
  t.seed = 0;
  t.random_table = table;
  expect_mask_matches("--seq-len 22 --num-heads 3 --pattern bigbird --block-size 4 "
                      "--num-random-blocks 1 --random-table " + path("table.npy"),
                      t, sizes_of(3, 22));
}

TEST_F(Mask, BigBirdEtc) {
  PatternSpec s;
  s.kind = PatternKind::bigbird_etc;
  s.block_size = 4;
  s.num_random_blocks = 1;
  s.num_global_tokens = 2;
  s.seed = 1;
  expect_mask_matches("--seq-len 26 --pattern bigbird-etc --block-size 4 --num-random-blocks 1 "
                      "--num-global-tokens 2 --seed 1",
                      s, sizes_of(1, 26));
}

TEST_F(Mask, HierarchicalFromSegmentIds) {
  Tensor<int64_t> ids({10}, 0);
  ids.data = {0, 0, 0, 1, 1, 2, 2, 2, 2, 3};
  write_npy(path("seg.npy"), ids);
  PatternSpec s;
  s.kind = PatternKind::hierarchical;
  s.segment_ids = ids.data;
  expect_mask_matches("--seq-len 10 --pattern hierarchical --segment-ids " + path("seg.npy"), s,
                      sizes_of(1, 10));
}

TEST_F(Mask, ExplicitMaskIsWrittenBackUnchanged) {
  Tensor<uint8_t> given({2, 5, 6}, 0);
  for (int64_t e = 0; e < given.numel(); ++e) given.data[e] = (e * 7 + 3) % 5 < 2;
  write_npy(path("given.npy"), given, true);
  PatternSpec s;
  s.kind = PatternKind::explicit_mask;
  s.mask = given;
  const Tensor<uint8_t> m = expect_mask_matches(
      "--seq-len 5 --seq-len-k 6 --num-heads 2 --pattern explicit --mask " + path("given.npy"), s,
      sizes_of(2, 5, 6));
  EXPECT_EQ(m.data, given.data);
}

TEST_F(Mask, KeyPaddingOfBatchTwoAddsABatchDimension) {
  Tensor<uint8_t> pad({2, 6}, 1);
  pad.data[5] = 0;
  pad.data[6] = 0;
  write_npy(path("pad.npy"), pad, false);
  PatternSpec s;
  s.key_padding_mask = pad;
  PatternSizes z = sizes_of(1, 6);
  z.batch = 2;
  expect_mask_matches("--seq-len 6 --key-padding-mask " + path("pad.npy"), s, z);
}

TEST_F(Mask, BoolDtypeOnRequest) {
  ASSERT_EQ(run("mask --seq-len 4 --out " + path("m.npy") + " --mask-dtype bool").exit_code, 0);
  EXPECT_EQ(read_npy_header(path("m.npy"), "m").dtype, NpyDtype::boolean);
  ASSERT_EQ(run("mask --seq-len 4 --out " + path("u.npy")).exit_code, 0);
  EXPECT_EQ(read_npy_header(path("u.npy"), "m").dtype, NpyDtype::uint8);
}

// --- info -------------------------------------------------------------------------

TEST_F(Mask, InfoJsonReportsThePatternStatistics) {
  const RunResult r = run("info --seq-len 100 --num-heads 2 --head-dim 8 --json "
                          "--pattern window --window 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // Rows 0..2 and 97..99 lose 3..1 keys at the edges: nnz = 2 * (100*7 - 2*(3+2+1)).
  EXPECT_EQ(j["nnz"], 2 * (700 - 12));
  EXPECT_EQ(j["dense_pairs"], 20000);
  EXPECT_EQ(j["keys_per_row"]["min"], 4);
  EXPECT_EQ(j["keys_per_row"]["max"], 7);
  EXPECT_EQ(j["flops"], 4.0 * 2 * (700 - 12) * 8);
  EXPECT_EQ(j["dense_flops"], 4.0 * 20000 * 8);
  EXPECT_EQ(j["empty_rows"], 0);
}

TEST_F(Mask, InfoTableNamesTheShortfallOfRandomBlocks) {
  // 4 blocks: query blocks 1 and 2 already see every block, so no random block remains.
  const RunResult r = run("info --seq-len 16 --pattern bigbird --block-size 4 "
                          "--num-random-blocks 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["random_shortfall"], 4);
  EXPECT_EQ(j["density"], 1.0);
  const RunResult t = run("info --seq-len 16 --pattern bigbird --block-size 4 --num-random-blocks 2");
  ASSERT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("4 short"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace sparseattn::testing_cli
