// Pattern facts checked exactly (contract §3; integer products compare exactly, contract §4):
// the materialized mask of every grid case equals allowed_spec(), contract §3 restated in
// tests/reference/allowed_spec.h, pair by pair; it does not depend on `tile`; the forms
// derived from the layout (HeadLayout::allowed, row_keys, nnz, full-tile flags) agree with
// it; per-head patterns follow each head's own spec; key padding removes exactly the
// padded keys and empties padded query rows.
#include <gtest/gtest.h>

#include <string>

#include "tests/reference/allowed_spec.h"
#include "tests/reference/grid.h"

namespace sparseattn {
namespace {

using testing_grid::Case;

// Every pair (h, i, j) of head h's dense mask against the spec predicate; reports the
// first few disagreements with their coordinates.
void expect_mask_equals_spec(const PatternSpec& spec, const PatternSizes& z, const Pattern& p,
                             int64_t h, const HeadLayout& layout) {
  const Tensor<uint8_t> mask = dense_mask(layout);
  ASSERT_EQ(mask.shape, (Shape{z.seq_len_q, z.seq_len_k}));
  int reported = 0;
  for (int64_t i = 0; i < z.seq_len_q; ++i)
    for (int64_t j = 0; j < z.seq_len_k; ++j) {
      const bool want = testing_spec::allowed_spec(spec, z, p.random_draws, h, i, j);
      const bool got = mask.data[i * z.seq_len_k + j] != 0;
      if (want != got && reported++ < 5)
        ADD_FAILURE() << "head " << h << " query " << i << " key " << j << ": mask " << got
                      << ", contract §3 " << want;
    }
}

// The derived forms are pure functions of the layout and must agree with dense_mask.
void expect_layout_consistent(const HeadLayout& layout) {
  const Tensor<uint8_t> mask = dense_mask(layout);
  const RowKeys rows = row_keys(layout);
  const int64_t Lq = layout.seq_len_q, Lk = layout.seq_len_k, T = layout.tile;
  int64_t ones = 0;
  for (uint8_t x : mask.data) ones += x;
  EXPECT_EQ(layout.nnz, ones);
  ASSERT_EQ(static_cast<int64_t>(rows.row_ptr.size()), Lq + 1);
  EXPECT_EQ(rows.row_ptr.back(), ones);
  for (int64_t i = 0; i < Lq; ++i) {
    std::vector<int32_t> from_mask;
    for (int64_t j = 0; j < Lk; ++j) {
      if (mask.data[i * Lk + j]) from_mask.push_back(static_cast<int32_t>(j));
      EXPECT_EQ(layout.allowed(i, j), mask.data[i * Lk + j] != 0) << "i " << i << " j " << j;
    }
    const std::vector<int32_t> listed(rows.col.begin() + rows.row_ptr[i],
                                      rows.col.begin() + rows.row_ptr[i + 1]);
    EXPECT_EQ(listed, from_mask) << "row " << i;
  }
  // Tiles: listed ascending; a full tile allows every in-bounds pair; a partial tile
  // allows at least one (empty tiles are never listed).
  for (int64_t qt = 0; qt < layout.num_q_tiles(); ++qt)
    for (int64_t e = layout.row_ptr[qt]; e < layout.row_ptr[qt + 1]; ++e) {
      if (e > layout.row_ptr[qt]) {
        EXPECT_LT(layout.col[e - 1], layout.col[e]);
      }
      const int64_t kt = layout.col[e];
      int64_t in_bounds = 0, allowed = 0;
      for (int64_t r = 0; r < T && qt * T + r < Lq; ++r)
        for (int64_t c = 0; c < T && kt * T + c < Lk; ++c) {
          ++in_bounds;
          allowed += mask.data[(qt * T + r) * Lk + kt * T + c];
        }
      if (layout.is_full(e)) {
        EXPECT_EQ(allowed, in_bounds) << "full tile " << qt << "," << kt;
      }
      EXPECT_GT(allowed, 0) << "empty tile listed " << qt << "," << kt;
    }
}

class PatternMask : public ::testing::TestWithParam<Case> {};

TEST_P(PatternMask, DenseMaskEqualsSpecTableForEveryHeadAndPair) {
  const Case& c = GetParam();
  const Pattern p = materialize(c.spec, c.sizes);
  for (int64_t h = 0; h < c.sizes.num_heads; ++h) {
    SCOPED_TRACE("head " + std::to_string(h));
    expect_layout_consistent(p.head(h));
    if (c.spec.kind == PatternKind::per_head) {
      // DECISION: head h of a per-head pattern is head h of its own spec materialized
      // alone (the PRNG is keyed with h).
      const Pattern alone = materialize(c.spec.per_head[h], c.sizes);
      expect_mask_equals_spec(c.spec.per_head[h], c.sizes, alone, h, p.head(h));
      EXPECT_EQ(dense_mask(p.head(h)).data, dense_mask(alone.head(h)).data);
    } else {
      expect_mask_equals_spec(c.spec, c.sizes, p, h, p.head(h));
    }
  }
}

// The tile is a storage choice, never a semantic one: tiles 1, 5 and 64 (and the block
// kinds' block-sized tiles are not affected by `tile` at all) give the same mask.
TEST_P(PatternMask, MaskDoesNotDependOnTile) {
  const Case& c = GetParam();
  std::vector<std::vector<uint8_t>> masks;
  for (int64_t tile : {1, 5, 64, 3}) {
    PatternSpec s = c.spec;
    s.tile = tile;
    for (PatternSpec& h : s.per_head) h.tile = tile;
    const Pattern p = materialize(s, c.sizes);
    std::vector<uint8_t> all;
    for (int64_t h = 0; h < c.sizes.num_heads; ++h) {
      const Tensor<uint8_t> m = dense_mask(p.head(h));
      all.insert(all.end(), m.data.begin(), m.data.end());
      if (s.kind != PatternKind::bigbird && s.kind != PatternKind::bigbird_etc &&
          s.kind != PatternKind::per_head) {
        EXPECT_EQ(p.head(h).tile, tile);
      }
    }
    masks.push_back(all);
  }
  for (size_t t = 1; t < masks.size(); ++t) EXPECT_EQ(masks[t], masks[0]) << "tile variant " << t;
}

// contract §2 key padding: Pattern::allowed = layout && key j real && query i's position real.
class PatternKeyPadding : public ::testing::TestWithParam<Case> {};

TEST_P(PatternKeyPadding, AllowedRemovesPaddedKeysAndEmptiesPaddedQueries) {
  const Case& c = GetParam();
  const Pattern p = materialize(c.spec, c.sizes);
  const PatternSizes& z = c.sizes;
  const Tensor<uint8_t>& kpm = *c.spec.key_padding_mask;
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t h = 0; h < z.num_heads; ++h)
      for (int64_t i = 0; i < z.seq_len_q; ++i) {
        const int64_t pos = i + z.seq_len_k - z.seq_len_q;
        const bool query_real = pos < 0 || pos >= z.seq_len_k || kpm.data[b * z.seq_len_k + pos];
        for (int64_t j = 0; j < z.seq_len_k; ++j) {
          const bool want = query_real && kpm.data[b * z.seq_len_k + j] &&
                            testing_spec::allowed_spec(c.spec, z, p.random_draws, h, i, j);
          ASSERT_EQ(p.allowed(b, h, i, j), want) << "b " << b << " h " << h << " i " << i << " j " << j;
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Grid, PatternMask, ::testing::ValuesIn(testing_grid::cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

std::vector<Case> padded_cases() {
  std::vector<Case> out;
  for (const Case& c : testing_grid::cases())
    if (c.spec.key_padding_mask && c.spec.kind != PatternKind::per_head) out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, PatternKeyPadding, ::testing::ValuesIn(padded_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Extra window/longformer shapes for the bottom-right alignment (contract §3): many
// (seq_len_q, seq_len_k) pairs, dilation larger than the sequence, causal both ways.
TEST(PatternMaskAlignment, WindowAndLongformerBottomRightOverManyLengthPairs) {
  using testing_grid::token;
  for (int64_t Lq : {1, 2, 5, 9})
    for (int64_t Lk : {1, 3, 9, 14})
      for (int64_t w : {0, 1, 3})
        for (int64_t d : {1, 2, 20})
          for (bool causal : {false, true}) {
            const PatternSizes z{1, 1, Lq, Lk};
            const PatternSpec window = token(PatternKind::window, w, d, causal, 5);
            const PatternSpec longformer = token(PatternKind::longformer, w, d, causal, 3, {Lk - 1});
            for (const PatternSpec& s : {window, longformer}) {
              SCOPED_TRACE(testing_grid::spec_tag(s) + " Lq " + std::to_string(Lq) + " Lk " +
                           std::to_string(Lk));
              const Pattern p = materialize(s, z);
              expect_mask_equals_spec(s, z, p, 0, p.head(0));
            }
          }
}

}  // namespace
}  // namespace sparseattn
