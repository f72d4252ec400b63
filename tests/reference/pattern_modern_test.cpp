// Checks contract §3.3 (the (left, right) window), §3.14 (chunked) and §3.15 (neighborhood)
// on hand-computed masks, on the equivalences the contract states ((L, R) = (W, W) is
// window W, (2, 0) is the causal window 2, (-1, -1) is dense), on NATTEN's own window-start
// arithmetic (transcribed below from its reference mask, not from pattern/), and §3.11's
// clamps of the new parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/reference/allowed_spec.h"
#include "tests/reference/grid.h"

namespace sparseattn {
namespace {

using testing_grid::chunked;
using testing_grid::neighborhood;
using testing_grid::token;
using testing_grid::window_pair;
using Rows = std::vector<std::vector<int64_t>>;

// The keys of every query row of head 0, ascending.
Rows rows_of(const PatternSpec& s, int64_t seq_len_q, int64_t seq_len_k) {
  const Pattern p = materialize(s, PatternSizes{1, 1, seq_len_q, seq_len_k});
  Rows out(static_cast<size_t>(seq_len_q));
  for (int64_t i = 0; i < seq_len_q; ++i)
    for (int64_t j = 0; j < seq_len_k; ++j)
      if (p.head(0).allowed(i, j)) out[static_cast<size_t>(i)].push_back(j);
  return out;
}

std::vector<uint8_t> mask_of(const PatternSpec& s, int64_t seq_len_q, int64_t seq_len_k) {
  std::vector<uint8_t> m;
  for (const auto& row : rows_of(s, seq_len_q, seq_len_k)) {
    std::vector<uint8_t> r(static_cast<size_t>(seq_len_k), 0);
    for (int64_t j : row) r[static_cast<size_t>(j)] = 1;
    m.insert(m.end(), r.begin(), r.end());
  }
  return m;
}

// ---- (left, right) windows, contract §3.3 -------------------------------------------------

TEST(WindowPair, AsymmetricOneLeftTwoRightByHand) {
  // n = 5: row p holds p-1 .. p+2, clipped.
  EXPECT_EQ(rows_of(window_pair(token(PatternKind::window, 0, 1, false, 5), 1, 2), 5, 5),
            (Rows{{0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4}, {3, 4}}));
  // And mirrored: three behind, none ahead (a causal-looking window without --causal).
  EXPECT_EQ(rows_of(window_pair(token(PatternKind::window, 0, 1, false, 5), 3, 0), 5, 5),
            (Rows{{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3, 4}}));
}

TEST(WindowPair, DilatedAndBottomRightByHand) {
  // L_q = 3, L_k = 8: positions 5, 6, 7; dilation 2, (L, R) = (2, 1): p-4, p-2, p, p+2.
  EXPECT_EQ(rows_of(window_pair(token(PatternKind::window, 0, 2, false, 5), 2, 1), 3, 8),
            (Rows{{1, 3, 5, 7}, {2, 4, 6}, {3, 5, 7}}));
}

TEST(WindowPair, TwoZeroIsTheCausalWindowTwo) {
  for (int64_t lq : {1, 4, 9, 13})
    for (int64_t lk : {1, 5, 9, 12})
      for (int64_t d : {1, 2, 3}) {
        SCOPED_TRACE("Lq " + std::to_string(lq) + " Lk " + std::to_string(lk) + " d " +
                     std::to_string(d));
        const std::vector<uint8_t> causal = mask_of(token(PatternKind::window, 2, d, true, 5), lq, lk);
        EXPECT_EQ(mask_of(window_pair(token(PatternKind::window, 0, d, false, 5), 2, 0), lq, lk), causal);
        // causal on top of any right reach, -1 included, is the same.
        for (int64_t r : {-1, 0, 3})
          EXPECT_EQ(mask_of(window_pair(token(PatternKind::window, 0, d, true, 5), 2, r), lq, lk), causal);
        // (W, W) is the symmetric window W.
        EXPECT_EQ(mask_of(window_pair(token(PatternKind::window, 0, d, false, 3), 2, 2), lq, lk),
                  mask_of(token(PatternKind::window, 2, d, false, 3), lq, lk));
      }
}

TEST(WindowPair, UnboundedBothSidesIsDense) {
  for (int64_t lq : {1, 6, 11})
    for (int64_t lk : {1, 6, 9}) {
      EXPECT_EQ(mask_of(window_pair(token(PatternKind::window, 0, 1, false, 5), -1, -1), lq, lk),
                mask_of(token(PatternKind::dense, 0, 1, false, 5), lq, lk));
      EXPECT_EQ(mask_of(window_pair(token(PatternKind::window, 0, 1, false, 5), -1, 0), lq, lk),
                mask_of(token(PatternKind::dense, 0, 1, true, 5), lq, lk));
    }
}

TEST(WindowPair, CanonicalizedToTheFiniteReachAndNoted) {
  // N = max(9, 13) = 13, dilation 2: reaches beyond floor(12 / 2) = 6 act as 6.
  const PatternSpec s = window_pair(token(PatternKind::window, 0, 2, false, 5), -1, 100);
  const Pattern p = materialize(s, PatternSizes{1, 1, 9, 13});
  ASSERT_TRUE(p.spec.window_left && p.spec.window_right);
  EXPECT_EQ(*p.spec.window_left, 6);
  EXPECT_EQ(*p.spec.window_right, 6);
  EXPECT_EQ(p.clamped, (std::vector<std::string>{"window_left -1 -> 6", "window_right 100 -> 6"}));
  EXPECT_EQ(p.band().left, 6);
  EXPECT_EQ(p.band().right, 6);
  EXPECT_EQ(describe(s), "window(window_left=-1, window_right=100, dilation=2, causal=0)");
}

// ---- chunked, contract §3.14 ----------------------------------------------------------------

TEST(Chunked, TwoCausalByHand) {
  EXPECT_EQ(rows_of(chunked(2, true, 5), 5, 5), (Rows{{0}, {0, 1}, {2}, {2, 3}, {4}}));
  EXPECT_EQ(rows_of(chunked(2, false, 5), 5, 5), (Rows{{0, 1}, {0, 1}, {2, 3}, {2, 3}, {4}}));
}

TEST(Chunked, QueriesBeforeTheFirstKeyShareNoChunk) {
  // L_q = 5, L_k = 3: positions -2, -1, 0, 1, 2; chunk 3 (and any chunk: 100 acts as 5).
  for (int64_t c : {3, 100})
    EXPECT_EQ(rows_of(chunked(c, false, 5), 5, 3), (Rows{{}, {}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}}));
  // L_q = 3, L_k = 7, chunk 3: positions 4, 5, 6 -> chunks 1, 1, 2.
  EXPECT_EQ(rows_of(chunked(3, false, 5), 3, 7), (Rows{{3, 4, 5}, {3, 4, 5}, {6}}));
  EXPECT_EQ(rows_of(chunked(3, true, 5), 3, 7), (Rows{{3, 4}, {3, 4, 5}, {6}}));
}

TEST(Chunked, ChunkBeyondTheSequenceIsDenseAndClamped) {
  const Pattern p = materialize(chunked(1000, false, 5), PatternSizes{1, 1, 6, 9});
  EXPECT_EQ(*p.spec.chunk_size, 9);
  EXPECT_EQ(p.clamped, (std::vector<std::string>{"chunk_size 1000 -> 9"}));
  EXPECT_EQ(pattern_stats(p).nnz, 6 * 9);
  EXPECT_EQ(describe(chunked(4, true, 5)), "chunked(chunk_size=4, causal=1)");
}

TEST(Chunked, CountsInClosedForm) {
  // n = 10, chunk 4: chunks of 4, 4, 2 -> 16 + 16 + 4 pairs; causal: 10 + 10 + 3.
  EXPECT_EQ(pattern_stats(materialize(chunked(4, false, 5), PatternSizes{1, 2, 10, 10})).nnz, 2 * 36);
  EXPECT_EQ(pattern_stats(materialize(chunked(4, true, 3), PatternSizes{1, 1, 10, 10})).nnz, 23);
}

// ---- neighborhood, contract §3.15 -----------------------------------------------------------

TEST(Neighborhood, ThreeOfFiveByHand) {
  EXPECT_EQ(rows_of(neighborhood(3, 1, false, 5), 5, 5),
            (Rows{{0, 1, 2}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {2, 3, 4}}));
  // causal: the 3 keys ending at p, fewer at the start.
  EXPECT_EQ(rows_of(neighborhood(3, 1, true, 5), 5, 5),
            (Rows{{0}, {0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}}));
}

TEST(Neighborhood, DilatedClassesOfUnequalLengthByHand) {
  // n = 7, d = 2, K = 3: class 0 = {0, 2, 4, 6}, class 1 = {1, 3, 5}.
  EXPECT_EQ(rows_of(neighborhood(3, 2, false, 1), 7, 7),
            (Rows{{0, 2, 4}, {1, 3, 5}, {0, 2, 4}, {1, 3, 5}, {2, 4, 6}, {1, 3, 5}, {2, 4, 6}}));
  EXPECT_EQ(rows_of(neighborhood(3, 2, true, 1), 7, 7),
            (Rows{{0}, {1}, {0, 2}, {1, 3}, {0, 2, 4}, {1, 3, 5}, {2, 4, 6}}));
}

TEST(Neighborhood, FewerQueriesThanKeysSitAtTheEnd) {
  // L_q = 2, L_k = 6: positions 4 and 5, both clamped to the last 3 keys.
  EXPECT_EQ(rows_of(neighborhood(3, 1, false, 5), 2, 6), (Rows{{3, 4, 5}, {3, 4, 5}}));
  EXPECT_EQ(describe(neighborhood(5, 2, true, 5)), "neighborhood(kernel_size=5, dilation=2, causal=1)");
}

// NATTEN's reference mask (csrc/include/natten/cuda/reference/mask.hpp, the
// NeighborhoodAttentionReferenceMask, stride 1), transcribed: a token's coordinate inside
// its dilation group is index / d, its group index % d; the group's length is
// L / d + 1 - ((group + (d - L % d)) / d); the window of K = 2*h + 1 starts at
// max(c - h, 0) + (c + h >= len) * (len - h - c - 1) and spans K, or with causal starts
// at max(c - (K - 1), 0) and ends after c.
bool natten_allows(int64_t L, int64_t K, int64_t d, bool causal, int64_t q, int64_t kv) {
  const int64_t qc = q / d, qg = q % d, kc = kv / d, kg = kv % d;
  const int64_t len = L / d + 1 - ((qg + (d - L % d)) / d);
  const int64_t h = K / 2;
  int64_t start = 0, end = 0;
  if (causal) {
    start = std::max<int64_t>(qc - 2 * h, 0);
    end = std::min(qc + 1, len);
  } else {
    start = std::max<int64_t>(qc - h, 0) + (qc + h >= len ? len - h - qc - 1 : 0);
    end = start + K;
  }
  return qg == kg && kc >= start && kc < end;
}

TEST(Neighborhood, MatchesNattensReferenceMaskEverywhere) {
  int64_t checked = 0;
  for (int64_t n = 1; n <= 23; ++n)
    for (int64_t k = 1; k <= n; k += 2)
      for (int64_t d = 1; k * d <= n; ++d)
        for (bool causal : {false, true}) {
          const PatternSpec s = neighborhood(k, d, causal, 5);
          const Pattern p = materialize(s, PatternSizes{1, 1, n, n});
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(p.head(0).allowed(i, j), natten_allows(n, k, d, causal, i, j))
                  << "n " << n << " K " << k << " d " << d << " causal " << causal << " i " << i
                  << " j " << j;
              ASSERT_EQ(p.head(0).allowed(i, j),
                        testing_spec::allowed_spec(s, p.sizes, p.random_draws, 0, i, j));
            }
          if (!causal) {  // every query attends exactly K keys
            const PatternStats st = pattern_stats(p);
            EXPECT_EQ(st.row_min, k);
            EXPECT_EQ(st.row_max, k);
          }
          ++checked;
        }
  EXPECT_GT(checked, 300);
}

// ---- contract §3.11: the new parameters beyond the sequence ----------------------------------

TEST(ModernParametersBeyondTheSequence, MaskIsThePredicateOfTheSpecAsGiven) {
  const int64_t big[] = {-1, 0, 1, 2, 5, 13, 14, 4611686018427387904, INT64_MAX};
  for (int64_t lq : {1, 6, 13})
    for (int64_t lk : {1, 7, 13})
      for (bool causal : {false, true}) {
        const PatternSizes z{1, 1, lq, lk};
        std::vector<PatternSpec> specs;
        for (int64_t l : big)
          for (int64_t r : big)
            for (int64_t d : {int64_t{1}, int64_t{3}, int64_t{4611686018427387904}})
              specs.push_back(window_pair(token(PatternKind::window, 0, d, causal, 5), l, r));
        for (int64_t c : big)
          if (c >= 1) specs.push_back(chunked(c, causal, 5));
        for (const PatternSpec& s : specs) {
          SCOPED_TRACE(describe(s) + " Lq " + std::to_string(lq) + " Lk " + std::to_string(lk));
          const Pattern p = materialize(s, z);
          for (int64_t i = 0; i < lq; ++i)
            for (int64_t j = 0; j < lk; ++j)
              ASSERT_EQ(p.head(0).allowed(i, j),
                        testing_spec::allowed_spec(s, z, p.random_draws, 0, i, j))
                  << "i " << i << " j " << j;
          // Canonical: a fixed point, every reach and chunk within the sequence.
          const PatternSpec again = canonicalize(p.spec, z);
          EXPECT_EQ(again.window_left, p.spec.window_left);
          EXPECT_EQ(again.window_right, p.spec.window_right);
          EXPECT_EQ(again.chunk_size, p.spec.chunk_size);
          const int64_t n = std::max(lq, lk);
          if (p.spec.window_left) {
            EXPECT_LE(*p.spec.window_left, n);
            EXPECT_GE(*p.spec.window_left, 0);
            EXPECT_GE(*p.spec.window_right, 0);
          }
          if (p.spec.chunk_size) {
            EXPECT_LE(*p.spec.chunk_size, n);
          }
        }
      }
}

}  // namespace
}  // namespace sparseattn
