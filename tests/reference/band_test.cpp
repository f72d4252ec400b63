// Checks contract §3.3 (window): the band arithmetic band.h shares with every kernel, by hand.
// pattern/band.h on its own (the window arithmetic the pattern builder, a3, the
// CPU window kernels and the CUDA kernels share), against values worked out by hand from
// contract §3: query i sits at key position p = i + seq_len_k - seq_len_q (bottom-right)
// and may attend j = p + d·t, -left <= t <= right (t <= 0 if causal), 0 <= j < seq_len_k;
// the symmetric window w is left = right = w.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "pattern/band.h"

namespace sparseattn {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::vector<int64_t> allowed_keys(const BandParams& b, int64_t i) {
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < b.seq_len_k; ++j)
    if (band_allows(b, i, j)) keys.push_back(j);
  return keys;
}

TEST(Band, FloorAndCeilDivisionRoundTowardMinusAndPlusInfinity) {
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(-6, 2), -3);
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(-7, 2), -3);
  EXPECT_EQ(ceil_div(0, 5), 0);
}

TEST(Band, DilatedWindowKeysByHand) {
  const BandParams b{5, 5, 1, 1, 2, false};
  EXPECT_EQ(allowed_keys(b, 2), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(allowed_keys(b, 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(allowed_keys(b, 3), (std::vector<int64_t>{1, 3}));
  const BandParams causal{5, 5, 1, 1, 2, true};
  EXPECT_EQ(allowed_keys(causal, 2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(allowed_keys(causal, 0), (std::vector<int64_t>{0}));
}

TEST(Band, StepsOfAnInteriorDilatedRow) {
  // n = 10, w = 2, d = 3, query 4: t in [ceil(-4/3), floor(5/3)] ∩ [-2, 2] = [-1, 1]:
  // keys 1, 4, 7.
  const BandSteps s = band_steps(BandParams{10, 10, 2, 2, 3, false}, 4);
  EXPECT_EQ(s.position, 4);
  EXPECT_EQ(s.t_lo, -1);
  EXPECT_EQ(s.t_hi, 1);
  EXPECT_EQ(s.count(), 3);
  EXPECT_EQ(allowed_keys(BandParams{10, 10, 2, 2, 3, false}, 4), (std::vector<int64_t>{1, 4, 7}));
}

// The blind spot of top-left alignment: with seq_len_k - seq_len_q not a multiple of the
// dilation the two alignments differ. One query over two keys, w = 1, d = 2: the query sits
// at position 1 and may attend key 1 only (top-left would give key 0).
TEST(Band, BottomRightAlignmentWhenTheOffsetIsNotAMultipleOfTheDilation) {
  const BandParams b{1, 2, 1, 1, 2, false};
  EXPECT_EQ(band_steps(b, 0).position, 1);
  EXPECT_EQ(allowed_keys(b, 0), (std::vector<int64_t>{1}));
  EXPECT_FALSE(band_allows(b, 0, 0));
  // Offset 11 (not a multiple of 3): query 0 sits at 11 and sees 8, 11, 14.
  EXPECT_EQ(allowed_keys(BandParams{10, 21, 1, 1, 3, false}, 0), (std::vector<int64_t>{8, 11, 14}));
  // More queries than keys: query 0 of 3 over 2 keys sits at -1; w = 1 reaches key 0,
  // causal (t <= 0) reaches nothing.
  EXPECT_EQ(allowed_keys(BandParams{3, 2, 1, 1, 1, false}, 0), (std::vector<int64_t>{0}));
  EXPECT_TRUE(allowed_keys(BandParams{3, 2, 1, 1, 1, true}, 0).empty());
  EXPECT_EQ(band_steps(BandParams{3, 2, 1, 1, 1, true}, 0).count(), 0);
}

// Parameters near 2^63 (contract §3: legal, mean what the formulas say): no overflow in
// the steps, the membership test or the key span.
TEST(Band, ParametersNear2To63DoNotOverflow) {
  const BandParams wide{16, 16, kMax, kMax, 1, false};
  EXPECT_EQ(allowed_keys(wide, 7).size(), 16u);
  EXPECT_EQ(band_steps(wide, 7).count(), 16);
  EXPECT_EQ(band_reach_left(wide), kMax);
  const KeySpan all = band_key_span(wide, 0, 16);
  EXPECT_EQ(all.lo, 0);
  EXPECT_EQ(all.hi, 15);
  const BandParams sparse{16, 16, kMax, kMax, kMax, false};  // only the key itself is in range
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(allowed_keys(sparse, i), (std::vector<int64_t>{i}));
  EXPECT_EQ(band_steps(sparse, 5).count(), 1);
  EXPECT_EQ(band_reach_right(sparse), kMax);
  const KeySpan span = band_key_span(sparse, 3, 5);
  EXPECT_EQ(span.lo, 0);
  EXPECT_EQ(span.hi, 15);
  const BandParams causal{16, 16, kMax, kMax, 3, true};
  const KeySpan c = band_key_span(causal, 3, 5);
  EXPECT_EQ(c.lo, 0);
  EXPECT_EQ(c.hi, 4);  // causal: nothing after the last query's position
  EXPECT_EQ(band_reach_left(BandParams{16, 16, 4611686018427387904, 4611686018427387904, 2, false}), kMax);
  EXPECT_EQ(band_reach_left(BandParams{16, 16, 3, 3, 5, false}), 15);
  EXPECT_EQ(band_reach_right(BandParams{16, 16, 3, kMax, 2, false}), kMax);
  EXPECT_EQ(band_reach_right(BandParams{16, 16, 3, kMax, 2, true}), 0);  // causal: none ahead
}

// (left, right) = (2, 1), contract §3.3: p - 2 .. p + 1, by hand.
TEST(Band, AsymmetricReachesByHand) {
  const BandParams b{6, 6, 2, 1, 1, false};
  EXPECT_EQ(allowed_keys(b, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(allowed_keys(b, 3), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(allowed_keys(b, 5), (std::vector<int64_t>{3, 4, 5}));
  const BandSteps s = band_steps(b, 3);
  EXPECT_EQ(s.t_lo, -2);
  EXPECT_EQ(s.t_hi, 1);
  // (0, 3) dilated by 2 over 4 queries and 9 keys: positions 5..8, keys p, p+2, p+4, p+6.
  EXPECT_EQ(allowed_keys(BandParams{4, 9, 0, 3, 2, false}, 0), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(allowed_keys(BandParams{4, 9, 0, 3, 2, true}, 0), (std::vector<int64_t>{5}));
  const KeySpan span = band_key_span(BandParams{4, 9, 0, 3, 2, false}, 0, 2);
  EXPECT_EQ(span.lo, 5);
  EXPECT_EQ(span.hi, 8);
}

TEST(Band, KeySpanCoversEveryAllowedKeyOfTheRows) {
  for (int64_t lq : {1, 5, 9})
    for (int64_t lk : {1, 4, 9})
      for (int64_t w : {0, 1, 3})
        for (int64_t r : {0, 2, 5})
        for (int64_t d : {1, 2, 3})
          for (bool causal : {false, true}) {
            const BandParams b{lq, lk, w, r, d, causal};
            for (int64_t i0 = 0; i0 < lq; ++i0)
              for (int64_t i1 = i0 + 1; i1 <= lq; ++i1) {
                const KeySpan s = band_key_span(b, i0, i1);
                for (int64_t i = i0; i < i1; ++i)
                  for (int64_t j : allowed_keys(b, i)) {
                    EXPECT_GE(j, s.lo);
                    EXPECT_LE(j, s.hi);
                  }
              }
          }
}

}  // namespace
}  // namespace sparseattn
