// Pattern facts in closed form or by construction (contract §3), compared exactly:
// per-row key counts of causal/window/dilated patterns, BigBird's block structure (ITC
// and ETC), token-level random keys, determinism of every draw, shortfall reporting.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "tests/reference/grid.h"

namespace sparseattn {
namespace {

using testing_grid::bigbird;
using testing_grid::token;

std::vector<int64_t> row_counts(const HeadLayout& layout) {
  const RowKeys rows = row_keys(layout);
  std::vector<int64_t> counts;
  for (int64_t i = 0; i < layout.seq_len_q; ++i) counts.push_back(rows.row_ptr[i + 1] - rows.row_ptr[i]);
  return counts;
}

std::set<int64_t> keys_of(const HeadLayout& layout, int64_t i) {
  std::vector<int32_t> keys;
  row_keys_of(layout, i, keys);
  return std::set<int64_t>(keys.begin(), keys.end());
}

// ---------------------------------------------------------------------------------------
// Per-row key counts, closed form. Self-attention unless stated; p = i.

TEST(PatternCounts, CausalDenseRowIHasPositionPlusOneKeysClippedToSeqLenK) {
  for (int64_t Lq : {1, 4, 9})
    for (int64_t Lk : {1, 4, 9}) {
      const Pattern p = materialize(token(PatternKind::dense, 0, 1, true, 5), {1, 1, Lq, Lk});
      const std::vector<int64_t> counts = row_counts(p.head(0));
      for (int64_t i = 0; i < Lq; ++i)
        EXPECT_EQ(counts[i], std::clamp<int64_t>(i + Lk - Lq + 1, 0, Lk))
            << "Lq " << Lq << " Lk " << Lk << " i " << i;
    }
}

TEST(PatternCounts, WindowAndDilatedRowCountsAreMinOfWindowAndRoomOnEachSidePlusOne) {
  for (int64_t n : {1, 7, 30})
    for (int64_t w : {0, 1, 3, 50})
      for (int64_t d : {1, 2, 5})
        for (bool causal : {false, true}) {
          const Pattern p = materialize(token(PatternKind::window, w, d, causal, 5), {1, 1, n, n});
          const std::vector<int64_t> counts = row_counts(p.head(0));
          int64_t total = 0;
          for (int64_t i = 0; i < n; ++i) {
            // Keys left of i: i/d of them on the dilated grid, at most w; right likewise.
            const int64_t left = std::min(w, i / d);
            const int64_t right = causal ? 0 : std::min(w, (n - 1 - i) / d);
            EXPECT_EQ(counts[i], left + 1 + right)
                << "n " << n << " w " << w << " d " << d << " causal " << causal << " i " << i;
            total += left + 1 + right;
          }
          const PatternStats st = pattern_stats(p);
          EXPECT_EQ(st.nnz, total);
          EXPECT_EQ(st.dense_pairs, n * n);
          // FLOPs = 4 · nnz · head_dim (2 for q·k, 2 for p·v per pair and element).
          EXPECT_EQ(attention_flops(st, 64, 64), 4.0 * total * 64);
        }
}

TEST(PatternCounts, InteriorWindowRowHasTwoWPlusOneKeys) {
  const Pattern p = materialize(token(PatternKind::window, 4, 3, false, 64), {1, 1, 100, 100});
  EXPECT_EQ(row_counts(p.head(0))[50], 9);
  EXPECT_EQ(keys_of(p.head(0), 50), (std::set<int64_t>{38, 41, 44, 47, 50, 53, 56, 59, 62}));
}

// ---------------------------------------------------------------------------------------
// BigBird ITC.

struct ItcFacts {
  int64_t n, b, r, heads;
};

void PrintTo(const ItcFacts& f, std::ostream* os) {
  *os << "n=" << f.n << " b=" << f.b << " r=" << f.r << " heads=" << f.heads;
}

class BigBirdItc : public ::testing::TestWithParam<ItcFacts> {};

TEST_P(BigBirdItc, GlobalRowsFullNeighboursAndGlobalBlocksSeenRandomBlocksDistinctOutside) {
  const ItcFacts f = GetParam();
  const Pattern p = materialize(bigbird(f.b, f.r, 123), {1, f.heads, f.n, f.n});
  const int64_t nb = (f.n + f.b - 1) / f.b;
  // contract §3, parameters beyond the sequence: r random blocks >= nb mean nb, and a
  // block_size >= n means n (one block); the draw table is that of the clamped values.
  ASSERT_EQ(p.random_draws.shape, (Shape{f.heads, std::max<int64_t>(nb - 2, 0), std::min(f.r, nb)}));
  auto block_keys = [&](int64_t kb) {
    std::set<int64_t> s;
    for (int64_t j = kb * f.b; j < std::min((kb + 1) * f.b, f.n); ++j) s.insert(j);
    return s;
  };
  // The canonical tiles are BigBird's blocks, and every listed block is a full tile
  // (a4 gathers whole blocks; only keys past seq_len_k are cut at the partial last block).
  for (int64_t h = 0; h < f.heads; ++h) {
    EXPECT_EQ(p.head(h).tile, std::min(f.b, f.n));
    for (int64_t e = 0; e < p.head(h).num_tiles(); ++e) EXPECT_TRUE(p.head(h).is_full(e)) << "tile " << e;
  }
  int64_t shortfall = 0;
  for (int64_t h = 0; h < f.heads; ++h)
    for (int64_t i = 0; i < f.n; ++i) {
      const int64_t qb = i / f.b;
      const std::set<int64_t> keys = keys_of(p.head(h), i);
      if (qb == 0 || qb == nb - 1) {  // global query blocks attend every key
        EXPECT_EQ(static_cast<int64_t>(keys.size()), f.n) << "global row " << i;
        continue;
      }
      std::set<int64_t> want_blocks = {0, nb - 1, qb - 1, qb, qb + 1};
      const int64_t* d = p.random_draws.ptr() + (h * (nb - 2) + qb - 1) * f.r;
      const int64_t available = nb - static_cast<int64_t>(want_blocks.size());
      std::set<int64_t> random;
      for (int64_t t = 0; t < f.r; ++t) {
        if (t < std::min(f.r, available)) {
          ASSERT_GE(d[t], 0) << "a draw was possible";
          ASSERT_LT(d[t], nb);
          EXPECT_EQ(want_blocks.count(d[t]), 0u) << "random block inside window/global set";
          EXPECT_TRUE(random.insert(d[t]).second) << "random block drawn twice";
        } else {
          EXPECT_EQ(d[t], -1) << "draw " << t << " should report a shortfall";
          if (i % f.b == 0) ++shortfall;
        }
      }
      want_blocks.insert(random.begin(), random.end());
      std::set<int64_t> want;
      for (int64_t kb : want_blocks) {
        const std::set<int64_t> s = block_keys(kb);
        want.insert(s.begin(), s.end());
      }
      EXPECT_EQ(keys, want) << "head " << h << " row " << i;
    }
  EXPECT_EQ(p.random_shortfall, shortfall);
}

INSTANTIATE_TEST_SUITE_P(Shapes, BigBirdItc,
                         ::testing::Values(ItcFacts{48, 4, 3, 3}, ItcFacts{45, 4, 3, 2},
                                           ItcFacts{24, 4, 3, 2}, ItcFacts{13, 4, 0, 1},
                                           ItcFacts{7, 4, 2, 1}, ItcFacts{3, 4, 2, 1},
                                           ItcFacts{20, 1, 4, 2}),
                         [](const ::testing::TestParamInfo<ItcFacts>& i) {
                           return "n" + std::to_string(i.param.n) + "_b" + std::to_string(i.param.b) +
                                  "_r" + std::to_string(i.param.r) + "_H" + std::to_string(i.param.heads);
                         });

TEST(BigBirdItcDraws, ShortfallWhenFewerThanRBlocksRemainIsMinusOneAtTheEndOfTheRow) {
  // nb = 6, r = 3: query blocks 1..4 have 2, 1, 1, 2 blocks left outside {0, 5, q-1, q, q+1}.
  const Pattern p = materialize(bigbird(4, 3, 9), {1, 2, 24, 24});
  EXPECT_EQ(p.random_shortfall, 2 * (1 + 2 + 2 + 1));
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t* d = p.random_draws.ptr() + h * 4 * 3;
    EXPECT_EQ(std::set<int64_t>(d, d + 2), (std::set<int64_t>{3, 4}));  // qb 1
    EXPECT_EQ(d[2], -1);
    EXPECT_EQ(d[3], 4);  // qb 2: only block 4 remains
    EXPECT_EQ(d[4], -1);
    EXPECT_EQ(d[5], -1);
    EXPECT_EQ(d[6], 1);  // qb 3: only block 1 remains
    EXPECT_EQ(std::set<int64_t>(d + 9, d + 11), (std::set<int64_t>{1, 2}));  // qb 4
    EXPECT_EQ(d[11], -1);
  }
}

TEST(BigBirdItcDraws, IdenticalForEqualSeedsDifferentForOtherSeedOrHead) {
  const PatternSizes z{1, 2, 64, 64};  // nb = 16: 11 candidates per row, 3 drawn
  const Pattern a = materialize(bigbird(4, 3, 7), z);
  const Pattern again = materialize(bigbird(4, 3, 7), z);
  const Pattern other_seed = materialize(bigbird(4, 3, 8), z);
  EXPECT_EQ(a.random_draws.data, again.random_draws.data);
  EXPECT_EQ(dense_mask(a.head(1)).data, dense_mask(again.head(1)).data);
  EXPECT_NE(a.random_draws.data, other_seed.random_draws.data);
  const size_t per_head = a.random_draws.data.size() / 2;
  EXPECT_FALSE(std::equal(a.random_draws.data.begin(), a.random_draws.data.begin() + per_head,
                          a.random_draws.data.begin() + per_head));
  EXPECT_NE(dense_mask(a.head(0)).data, dense_mask(a.head(1)).data);
}

// The exact draws, computed outside this code base (a 20-line Python restatement of
// docs/patterns.md's algorithm): a change of PRNG or of the sampling rule fails here.
TEST(BigBirdItcDraws, DrawsMatchHardCodedValuesFromTheDocumentedAlgorithm) {
  // n = 40, b = 4: nb = 10; query block 4 excludes {0, 3, 4, 5, 9}; seed 3, r = 3.
  const Pattern p = materialize(bigbird(4, 3, 3), {1, 2, 40, 40});
  const int64_t* h0 = p.random_draws.ptr() + (0 * 8 + 3) * 3;
  const int64_t* h1 = p.random_draws.ptr() + (1 * 8 + 3) * 3;
  EXPECT_EQ(std::vector<int64_t>(h0, h0 + 3), (std::vector<int64_t>{6, 1, 7}));
  EXPECT_EQ(std::vector<int64_t>(h1, h1 + 3), (std::vector<int64_t>{1, 6, 8}));
}

TEST(BigBirdItcDraws, ExplicitRandomTableIsUsedAsGivenAndDuplicatesCountOnce) {
  PatternSpec s = bigbird(4, 2, 0);
  Tensor<int64_t> table({1, 4, 2}, 0);
  table.data = {3, 3, 0, 4, 1, 2, 2, 2};  // qb1 {3,3}: a duplicate; qb2 {0,4}: inside window
  s.random_table = table;
  const Pattern p = materialize(s, {1, 1, 24, 24});
  EXPECT_EQ(p.random_draws.data, table.data);
  // Row 4 (qb 1): blocks {0, 5, 0, 1, 2} ∪ {3} = {0,1,2,3,5}: 5 blocks of 4 keys.
  EXPECT_EQ(keys_of(p.head(0), 4).size(), 20u);
  // Row 8 (qb 2): {0, 5, 1, 2, 3} ∪ {0, 4} = all 6 blocks.
  EXPECT_EQ(keys_of(p.head(0), 8).size(), 24u);
}

// ---------------------------------------------------------------------------------------
// BigBird ETC.

TEST(BigBirdEtc, GlobalTokensAttendAllAndAreAttendedByAllOthersFollowBlocks) {
  const int64_t n = 31, g = 3, b = 4, r = 2;
  const Pattern p = materialize(bigbird(b, r, 5, g), {1, 2, n, n});
  const int64_t nb = (n - g + b - 1) / b;  // 7 blocks of the non-global tokens
  ASSERT_EQ(p.random_draws.shape, (Shape{2, nb, r}));
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < n; ++i) {
      const std::set<int64_t> keys = keys_of(p.head(h), i);
      if (i < g) {
        EXPECT_EQ(static_cast<int64_t>(keys.size()), n);
        continue;
      }
      const int64_t qb = (i - g) / b;
      std::set<int64_t> blocks;
      for (int64_t kb = qb - 1; kb <= qb + 1; ++kb)
        if (kb >= 0 && kb < nb) blocks.insert(kb);
      const int64_t* d = p.random_draws.ptr() + (h * nb + qb) * r;
      for (int64_t t = 0; t < r; ++t) {
        ASSERT_GE(d[t], 0);
        EXPECT_EQ(blocks.count(d[t]), 0u) << "random block among the neighbours";
      }
      EXPECT_NE(d[0], d[1]);
      blocks.insert(d, d + r);
      std::set<int64_t> want;
      for (int64_t j = 0; j < g; ++j) want.insert(j);
      for (int64_t kb : blocks)
        for (int64_t j = g + kb * b; j < std::min(g + (kb + 1) * b, n); ++j) want.insert(j);
      EXPECT_EQ(keys, want) << "head " << h << " row " << i;
    }
}

// ---------------------------------------------------------------------------------------
// Token-level random keys.

TEST(RandomTokens, RDistinctKeysOutsideWindowAndGlobalSetPerQuery) {
  const int64_t n = 40, w = 2, r = 4, H = 2;
  const Pattern p = materialize(token(PatternKind::random, w, 1, false, 5, {5}, r, 21), {1, H, n, n});
  ASSERT_EQ(p.random_draws.shape, (Shape{H, n, r}));
  int64_t global_rows = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t* d = p.random_draws.ptr() + (h * n + i) * r;
      if (i == 5) {  // a global row already attends every key: nothing left to draw
        for (int64_t t = 0; t < r; ++t) EXPECT_EQ(d[t], -1);
        ++global_rows;
        continue;
      }
      std::set<int64_t> base = {5};
      for (int64_t j = std::max<int64_t>(0, i - w); j <= std::min(n - 1, i + w); ++j) base.insert(j);
      std::set<int64_t> drawn;
      for (int64_t t = 0; t < r; ++t) {
        ASSERT_GE(d[t], 0);
        ASSERT_LT(d[t], n);
        EXPECT_EQ(base.count(d[t]), 0u) << "random key inside window/global set, row " << i;
        EXPECT_TRUE(drawn.insert(d[t]).second) << "random key drawn twice, row " << i;
      }
      EXPECT_EQ(keys_of(p.head(h), i).size(), base.size() + r);
    }
  EXPECT_EQ(p.random_shortfall, global_rows * r);
}

TEST(RandomTokens, CausalDrawsStayAtOrBeforeThePositionAndShortfallIsReported) {
  // w = 0, causal, r = 3: query i may draw among its i earlier keys; rows 0..2 fall short.
  const Pattern p = materialize(token(PatternKind::random, 0, 1, true, 5, {}, 3, 4), {1, 1, 10, 10});
  int64_t expected_shortfall = 0;
  for (int64_t i = 0; i < 10; ++i) {
    const int64_t* d = p.random_draws.ptr() + i * 3;
    const int64_t possible = std::min<int64_t>(3, i);
    for (int64_t t = 0; t < 3; ++t) {
      if (t < possible) {
        EXPECT_GE(d[t], 0);
        EXPECT_LT(d[t], i);
      } else {
        EXPECT_EQ(d[t], -1);
        ++expected_shortfall;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(keys_of(p.head(0), i).size()), 1 + possible);
  }
  EXPECT_EQ(p.random_shortfall, expected_shortfall);
}

TEST(RandomTokens, IdenticalForEqualSeedsDifferentForOtherSeedOrHead) {
  const PatternSizes z{1, 2, 50, 50};
  const Pattern a = materialize(token(PatternKind::random, 1, 1, false, 5, {}, 3, 1), z);
  const Pattern again = materialize(token(PatternKind::random, 1, 1, false, 5, {}, 3, 1), z);
  const Pattern other = materialize(token(PatternKind::random, 1, 1, false, 5, {}, 3, 2), z);
  EXPECT_EQ(a.random_draws.data, again.random_draws.data);
  EXPECT_NE(a.random_draws.data, other.random_draws.data);
  EXPECT_NE(dense_mask(a.head(0)).data, dense_mask(a.head(1)).data);
}

}  // namespace
}  // namespace sparseattn
