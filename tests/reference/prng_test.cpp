// Checks contract §3.10 (random draws: the counter-based PRNG).
// The counter-based PRNG (pattern/prng.h) against values computed outside this
// code base: SplitMix64's published first output for seed 0, and a Python restatement of
// docs/patterns.md's algorithm. A change of mixing constants, key derivation, counter
// use or rejection rule fails here, before it silently changes every random pattern.
#include <gtest/gtest.h>

#include <vector>

#include "pattern/prng.h"

namespace sparseattn {
namespace {

TEST(Prng, SplitMix64FinalizerMatchesPublishedValues) {
  // SplitMix64 seeded with 0 first returns 0xE220A8397B1DCDAF (Steele et al. 2014;
  // Vigna's reference splitmix64.c): the state advances by the golden gamma, then mixes.
  EXPECT_EQ(splitmix64_mix(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64_mix(1), 0x910A2DEC89025CC1ull);
  EXPECT_EQ(splitmix64_mix(~0ull), 0xE4D971771B652C20ull);
}

TEST(Prng, StreamKeyAndDrawsMatchHardCodedValues) {
  EXPECT_EQ(prng_stream_key(0, 0, 0), 0x238275BC38FCBE91ull);
  const uint64_t key = prng_stream_key(42, 1, 7);
  EXPECT_EQ(key, 0x1B1863149F1726FAull);
  EXPECT_EQ(prng_bits(key, 0), 0x3698605EF416804Eull);
  EXPECT_EQ(prng_bits(key, 1), 0x793CDFB7DEE69F95ull);
  EXPECT_EQ(prng_bits(key, 2), 0xF8361161BFAFDAB0ull);
  EXPECT_EQ(prng_bits(key, 3), 0x7BD8C4DD417731A8ull);
}

TEST(Prng, UniformBelowMatchesHardCodedSequenceAndAdvancesCounterOncePerDraw) {
  const uint64_t key = prng_stream_key(42, 1, 7);
  uint64_t counter = 0;
  std::vector<uint64_t> got;
  for (uint64_t bound : {10, 10, 10, 1000, 7, 1}) got.push_back(prng_uniform_below(key, &counter, bound));
  EXPECT_EQ(got, (std::vector<uint64_t>{8, 7, 6, 872, 6, 0}));
  EXPECT_EQ(counter, 6u);  // no rejection happened for these small bounds
}

TEST(Prng, StreamsDifferBySeedHeadAndRow) {
  EXPECT_NE(prng_stream_key(1, 0, 0), prng_stream_key(0, 0, 0));
  EXPECT_NE(prng_stream_key(0, 1, 0), prng_stream_key(0, 0, 0));
  EXPECT_NE(prng_stream_key(0, 0, 1), prng_stream_key(0, 0, 0));
  // (seed, head) and (head, seed) are different streams: the key is not symmetric.
  EXPECT_NE(prng_stream_key(1, 2, 3), prng_stream_key(2, 1, 3));
}

TEST(Prng, UniformBelowStaysInRangeForAwkwardBounds) {
  const uint64_t key = prng_stream_key(9, 9, 9);
  uint64_t counter = 0;
  for (uint64_t bound : {1ull, 2ull, 3ull, (1ull << 63) + 1, ~0ull})
    for (int t = 0; t < 100; ++t) EXPECT_LT(prng_uniform_below(key, &counter, bound), bound);
}

}  // namespace
}  // namespace sparseattn
