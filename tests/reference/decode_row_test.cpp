// Checks contract §2.10–§2.12 (which keys a query row of a sequence reads: bottom-right
// against the sequence's filled length n, the pattern's rule on logical positions, no key
// >= n) on pattern/decode_row.h alone — the one rule cpu_k09_decode, cuda_c09_decode and
// cuda_c11_varlen read. Hand-worked rows first (n = 0, 1 and the capacity; L_q = 1 and
// L_q > 1, L_q > n; dense, causal, window with left/right reach and dilation, chunked), then
// every row of small sequences against the spec materialized for (L_q, n).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pattern/decode_row.h"
#include "pattern/pattern.h"
#include "tests/reference/decode_specs.h"

namespace sparseattn {
namespace {

using testing_spec::chunked;
using testing_spec::dense;
using testing_spec::window;

// The keys of the row, listed: {lo, lo + stride, …, hi}.
std::vector<int64_t> keys(const PatternSpec& spec, int64_t lq, int64_t n, int64_t i) {
  const DecodeRowKeys r = decode_row_keys(spec, lq, n, i);
  std::vector<int64_t> out;
  for (int64_t j = r.lo; j <= r.hi; j += r.stride) out.push_back(j);
  return out;
}
using Keys = std::vector<int64_t>;

TEST(DecodeRow, NoKeyInTheSequenceMeansAnEmptyRow) {  // cache_seqlens[b] = 0
  for (const PatternSpec& s : {dense(false), dense(true), window(2, 1, 1, false), chunked(4, true)})
    for (int64_t lq : {1, 3}) {
      SCOPED_TRACE(describe(s) + " L_q " + std::to_string(lq));
      for (int64_t i = 0; i < lq; ++i) EXPECT_EQ(keys(s, lq, 0, i), Keys{});
    }
}

TEST(DecodeRow, DenseRowsByHand) {
  // One key (cache_seqlens 1): the single query sits on it.
  EXPECT_EQ(keys(dense(false), 1, 1, 0), (Keys{0}));
  EXPECT_EQ(keys(dense(true), 1, 1, 0), (Keys{0}));
  // The full cache (n = L_cache = 8), one query: p = 7, every key.
  EXPECT_EQ(keys(dense(true), 1, 8, 0), (Keys{0, 1, 2, 3, 4, 5, 6, 7}));
  // L_q = 3 against n = 5, causal: p = 2, 3, 4.
  EXPECT_EQ(keys(dense(true), 3, 5, 0), (Keys{0, 1, 2}));
  EXPECT_EQ(keys(dense(true), 3, 5, 2), (Keys{0, 1, 2, 3, 4}));
  EXPECT_EQ(keys(dense(false), 3, 5, 0), (Keys{0, 1, 2, 3, 4}));
  // L_q = 4 > n = 2, causal: p = i − 2; rows 0 and 1 sit before the first key.
  EXPECT_EQ(keys(dense(true), 4, 2, 0), Keys{});
  EXPECT_EQ(keys(dense(true), 4, 2, 1), Keys{});
  EXPECT_EQ(keys(dense(true), 4, 2, 2), (Keys{0}));
  EXPECT_EQ(keys(dense(true), 4, 2, 3), (Keys{0, 1}));
}

TEST(DecodeRow, WindowRowsByHand) {
  // left 2, right 1, n = 8, one query: p = 7, keys 5..8 cut at the last key 7.
  EXPECT_EQ(keys(window(2, 1, 1, false), 1, 8, 0), (Keys{5, 6, 7}));
  // L_q = 3: p = 5, 6, 7.
  EXPECT_EQ(keys(window(2, 1, 1, false), 3, 8, 0), (Keys{3, 4, 5, 6}));
  EXPECT_EQ(keys(window(2, 1, 1, false), 3, 8, 2), (Keys{5, 6, 7}));
  // Causal left 3 on a one-key cache: p = 0, key 0 only.
  EXPECT_EQ(keys(window(3, 0, 1, true), 1, 1, 0), (Keys{0}));
  // Dilation 2, left 2, causal, n = 8: p = 7, keys 7 − 2·{2, 1, 0}.
  EXPECT_EQ(keys(window(2, 0, 2, true), 1, 8, 0), (Keys{3, 5, 7}));
  const DecodeRowKeys r = decode_row_keys(window(2, 0, 2, true), 1, 8, 0);
  EXPECT_EQ(r.stride, 2);
  // L_q = 2 > n = 1, causal left 1: row 0 at p = −1 reaches no key, row 1 at p = 0.
  EXPECT_EQ(keys(window(1, 0, 1, true), 2, 1, 0), Keys{});
  EXPECT_EQ(keys(window(1, 0, 1, true), 2, 1, 1), (Keys{0}));
}

TEST(DecodeRow, ChunkedRowsByHand) {
  // Chunks of 4, n = 6, L_q = 2, causal: p = 4, 5 in chunk [4, 7], cut at p.
  EXPECT_EQ(keys(chunked(4, true), 2, 6, 0), (Keys{4}));
  EXPECT_EQ(keys(chunked(4, true), 2, 6, 1), (Keys{4, 5}));
  // Not causal, one query at p = 5: the chunk [4, 7] cut at the last key 5.
  EXPECT_EQ(keys(chunked(4, false), 1, 6, 0), (Keys{4, 5}));
  // L_q = 3 > n = 1: rows 0 and 1 before the first key have no chunk (contract §3.14).
  EXPECT_EQ(keys(chunked(4, false), 3, 1, 0), Keys{});
  EXPECT_EQ(keys(chunked(4, false), 3, 1, 2), (Keys{0}));
}

TEST(DecodeRow, AllowsExactlyTheProgression) {
  const DecodeRowKeys r{3, 7, 2};
  for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(decode_row_allows(r, j), j == 3 || j == 5 || j == 7) << j;
  const DecodeRowKeys empty{};
  for (int64_t j = -1; j < 3; ++j) EXPECT_FALSE(decode_row_allows(empty, j)) << j;
}

// Every row of every small sequence is the spec materialized for (L_q, n): the rule is the
// definition of §2.10–§2.12, not a second copy of the pattern that could drift from it.
TEST(DecodeRow, EveryRowIsTheMaterializedPatternOfItsSequence) {
  const std::vector<PatternSpec> specs = {dense(false), dense(true), window(3, 2, 1, false), window(5, 0, 2, true),
                                          window(-1, 4, 3, false), window(100, 0, 1, true), chunked(3, false),
                                          chunked(4, true)};
  for (const PatternSpec& spec : specs)
    for (int64_t lq : {1, 2, 5, 11})
      for (int64_t n = 1; n <= 12; ++n) {
        SCOPED_TRACE(describe(spec) + " L_q " + std::to_string(lq) + " n " + std::to_string(n));
        const Pattern p = materialize(spec, {1, 1, lq, n});
        ASSERT_TRUE(decode_row_rule_covers(p.spec));
        for (int64_t i = 0; i < lq; ++i) {
          const DecodeRowKeys r = decode_row_keys(spec, lq, n, i);
          for (int64_t j = 0; j < n; ++j) ASSERT_EQ(decode_row_allows(r, j), p.allowed(0, 0, i, j)) << i << " " << j;
          ASSERT_TRUE(r.lo > r.hi || (r.lo >= 0 && r.hi < n)) << "a key the sequence does not hold";
        }
      }
}

TEST(DecodeRow, CoversOneSpecOfTheProgressionKindsWithoutPadding) {
  for (const PatternSpec& s : {dense(false), window(2, 1, 1, false), chunked(4, true)})
    EXPECT_TRUE(decode_row_rule_covers(s)) << describe(s);
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  EXPECT_FALSE(decode_row_rule_covers(lf));
  PatternSpec padded = dense(false);
  padded.key_padding_mask = Tensor<uint8_t>({1, 4}, 1);
  EXPECT_FALSE(decode_row_rule_covers(padded));
  PatternSpec mixed = dense(false);
  mixed.per_head = {dense(true), dense(false)};
  EXPECT_FALSE(decode_row_rule_covers(mixed));
}

}  // namespace
}  // namespace sparseattn
