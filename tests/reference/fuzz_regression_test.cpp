// Checks contract §3.11 (parameters beyond the sequence) and §5.5 (memory bounds): the fuzzers' findings as regressions.
// Inputs tests/fuzz/fuzz_pattern found (docs/robustness.md), written out in the field's
// terms. contract §3 "parameters beyond the sequence": a parameter larger than the sequence
// needs gives the pattern of the equivalent clamped value, in time and memory bounded by
// seq_len (contract §5); the mask is compared with allowed_spec() for the clamped value.
//
// Each of these once failed (UBSan signed overflow, std::length_error, memory in
// proportion to the parameter, a miscounted shortfall); canonicalize() and the layout
// builder fixed them, and they stay here so that no change brings one back.
// Replay the fuzzer's own input with `build-fuzz/fuzz_pattern <file>` (SPARSEATTN_FUZZ_PRINT=1
// prints it as the command or spec below).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "pattern/pattern.h"
#include "tests/reference/allowed_spec.h"

namespace sparseattn {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Every head's dense mask equals allowed_spec() evaluated on `equivalent` (the same
// pattern with its parameter clamped to the sequence).
void expect_mask_of(const Pattern& p, const PatternSpec& equivalent) {
  const PatternSizes& z = p.sizes;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const Tensor<uint8_t> mask = dense_mask(p.head(h));
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      for (int64_t j = 0; j < z.seq_len_k; ++j)
        ASSERT_EQ(mask.data[i * z.seq_len_k + j] != 0,
                  testing_spec::allowed_spec(equivalent, z, p.random_draws, h, i, j))
            << "head " << h << " i " << i << " j " << j;
  }
}

PatternSpec bigbird_spec(int64_t block_size, int64_t num_global_tokens = 0) {
  PatternSpec s;
  s.kind = num_global_tokens > 0 ? PatternKind::bigbird_etc : PatternKind::bigbird;
  s.block_size = block_size;
  s.num_global_tokens = num_global_tokens;
  return s;
}

// `sparseattn mask --seq-len 35 --num-heads 2 --pattern bigbird --block-size
// 8253757376470132022 --out m.npy`: LayoutBuilder::scratch_for computes tile * words_per_row
// (layout.cpp), which overflows int64 (UBSan: signed integer overflow).
TEST(FuzzFound, BigBirdBlockSizeFarBeyondTheSequenceIsOneDenseBlock) {
  const PatternSizes z{1, 2, 35, 35};
  const Pattern p = materialize(bigbird_spec(8253757376470132022), z);
  expect_mask_of(p, bigbird_spec(35));
}

// bigbird, block_size = 2^63 - 1, n = 16: nb = (n + block_size - 1) / block_size overflows
// in validate_kind (materialize.cpp).
TEST(FuzzFound, BigBirdBlockSizeInt64MaxIsOneDenseBlock) {
  const PatternSizes z{1, 1, 16, 16};
  const Pattern p = materialize(bigbird_spec(kMax), z);
  expect_mask_of(p, bigbird_spec(16));
}

// bigbird-etc, block_size = 2^63 - 1, 23 global tokens of 24: the same nb overflow
// (materialize.cpp, validate_kind, ETC branch).
TEST(FuzzFound, BigBirdEtcBlockSizeInt64MaxIsOneBlock) {
  const PatternSizes z{1, 3, 24, 24};
  const Pattern p = materialize(bigbird_spec(kMax, 23), z);
  expect_mask_of(p, bigbird_spec(24, 23));
}

// PatternSpec::tile (library only) near 2^63: LayoutBuilder's constructor computes
// (seq_len + tile - 1) / tile and overflows (layout.cpp). The allowed set never depends on
// the tile (spec.h), so this is the longformer pattern of tile 24.
TEST(FuzzFound, TileFarBeyondTheSequenceGivesTheSameMask) {
  const PatternSizes z{1, 1, 24, 24};
  PatternSpec s;
  s.kind = PatternKind::longformer;
  s.window = 13;
  s.dilation = 4;
  s.global = {23};
  s.tile = 9223372036854775787;
  const Pattern p = materialize(s, z);
  s.tile = 24;
  expect_mask_of(p, s);
}

// tile = 2^24 - 1 on 10 tokens: scratch_for allocates tile * ceil(tile / 64) words
// (2^42 bytes); std::length_error or an out-of-memory abort instead of the 10-token mask.
TEST(FuzzFound, LargeTileAllocatesNoMoreThanTheSequenceNeeds) {
  const PatternSizes z{1, 1, 10, 10};
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = 13;
  s.tile = 16777215;
  const Pattern p = materialize(s, z);
  s.tile = 10;
  expect_mask_of(p, s);
}

// random, num_random = 2^40 on 8 tokens: the table of draws is
// [num_heads, seq_len_q, num_random] int64 (8 TiB), refused as "would not fit in memory",
// or (2^20 on 36 tokens, what the fuzzer hit) 300 MB allocated for 36 tokens. At most
// seq_len_k draws can succeed, so every visible key is allowed: causal dense.
TEST(FuzzFound, NumRandomFarBeyondTheSequenceAllowsEveryVisibleKey) {
  const PatternSizes z{1, 1, 8, 8};
  PatternSpec s;
  s.kind = PatternKind::random;
  s.causal = true;
  s.num_random = int64_t{1} << 40;
  const Pattern p = materialize(s, z);
  PatternSpec dense;
  dense.causal = true;
  expect_mask_of(p, dense);
}

// random, causal, seq_len_q = 26 > seq_len_k = 23, 2 heads: the first 3 queries sit
// before the first key and draw nothing; their draws stay -1 in random_draws but were not
// counted in random_shortfall, which pattern.h defines as "number of -1 entries in
// random_draws" (8 entries, random_shortfall was 2): they are counted now.
TEST(FuzzFound, RandomShortfallCountsEveryMinusOneDraw) {
  const PatternSizes z{1, 2, 26, 23};
  PatternSpec s;
  s.kind = PatternKind::random;
  s.causal = true;
  s.window = 0;
  s.dilation = 2;
  s.num_random = 1;
  s.seed = 14914978214936663687ull;
  const Pattern p = materialize(s, z);
  int64_t minus_one = 0;
  for (int64_t x : p.random_draws.data) minus_one += x == -1;
  EXPECT_EQ(p.random_shortfall, minus_one);
}

}  // namespace
}  // namespace sparseattn
