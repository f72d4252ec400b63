// Known facts of the graph view (contract §6), asserted exactly where the answer
// is exact. Each case runs g1 (the fast engine); reach_agree_test.cpp proves g1 == g0.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph/measures.h"
#include "graph/reach.h"
#include "graph_test_util.h"

namespace sparseattn::graph {
namespace {

using namespace testing;

std::string config(int64_t n, int64_t w, int64_t d = 1) {
  return "seq_len=" + std::to_string(n) + " window=" + std::to_string(w) +
         " dilation=" + std::to_string(d);
}

// Longformer §3.1: a sliding window of one-sided width w moves information w tokens per
// layer, so the two ends of the sequence meet after ceil((n-1)/w) layers.
TEST(ReachFacts, WindowMixingDepthIsCeilNMinus1OverW) {
  for (int64_t n : {1, 2, 7, 64, 65, 200, 1000})
    for (int64_t w : {1, 2, 3, 17, 64}) {
      SCOPED_TRACE(config(n, w));
      const ReachSummary s = g1_reach_bitset(stack_of(window_spec(w), n), -1);
      ASSERT_TRUE(mixing_depth(s).has_value());
      EXPECT_EQ(*mixing_depth(s), (n - 1 + w - 1) / w);
      EXPECT_EQ(s.never, 0);
    }
}

// An interior token's receptive field after ℓ layers is [i - ℓw, i + ℓw]: 2ℓw+1 tokens.
TEST(ReachFacts, WindowCoverageIs2LWPlus1) {
  const int64_t n = 500, i = 250, layers = 6;
  for (int64_t w : {1, 3, 8}) {
    SCOPED_TRACE(config(n, w));
    const ReachSummary s = g1_reach_bitset(stack_of(window_spec(w), n, layers), i);
    for (int64_t l = 1; l <= layers; ++l) {
      EXPECT_EQ(s.coverage[l - 1], 2 * l * w + 1) << "layer " << l;
      EXPECT_EQ(s.span[l - 1], l * w) << "layer " << l;
    }
  }
}

// Causal window: only the past, ℓw + 1 tokens; the future never reaches the past.
TEST(ReachFacts, CausalWindowCoverageIsLWPlus1AndNeverMixes) {
  const int64_t n = 300, i = 200, layers = 5;
  for (int64_t w : {1, 4, 7}) {
    SCOPED_TRACE(config(n, w) + " causal");
    const ReachSummary s = g1_reach_bitset(stack_of(window_spec(w, 1, true), n, layers), i);
    for (int64_t l = 1; l <= layers; ++l) EXPECT_EQ(s.coverage[l - 1], l * w + 1);
    EXPECT_FALSE(mixing_depth(s).has_value());
    EXPECT_EQ(s.never, n * (n - 1) / 2);  // exactly the pairs j > i
  }
}

// One dilation d everywhere: positions that differ mod d never meet; the receptive field
// keeps 2ℓw+1 tokens but spans ℓdw (Longformer §3.1: dilated receptive field ℓ·d·w).
TEST(ReachFacts, DilationAloneNeverMixesCoverage2LWPlus1SpanLDW) {
  const int64_t n = 600, i = 300, layers = 4;
  for (int64_t w : {1, 2, 5})
    for (int64_t d : {2, 3, 4}) {
      SCOPED_TRACE(config(n, w, d));
      const ReachSummary s = g1_reach_bitset(stack_of(window_spec(w, d), n, layers), i);
      EXPECT_FALSE(mixing_depth(s).has_value());
      EXPECT_FALSE(diameter(s).has_value());
      for (int64_t l = 1; l <= layers; ++l) {
        EXPECT_EQ(s.coverage[l - 1], 2 * l * w + 1) << "layer " << l;
        EXPECT_EQ(s.span[l - 1], l * d * w) << "layer " << l;
      }
      // Connected pairs are exactly the pairs in the same residue class mod d.
      int64_t same_class = 0;
      for (int64_t c = 0; c < d; ++c) {
        const int64_t size = (n - c + d - 1) / d;
        same_class += size * size;
      }
      EXPECT_EQ(s.never, n * n - same_class);
    }
}

// Adding an undilated head (window 1) to the dilated one: the layer's edge set is the
// union, residues can now change, and the interior fills. With k = floor(d/2) local steps
// any residue is fixed, so every offset |o| <= (ℓ-k)·d·w - k is reached after ℓ layers.
TEST(ReachFacts, UndilatedHeadFillsTheInterior) {
  const int64_t n = 400, i = 200, layers = 6;
  for (int64_t w : {2, 3})
    for (int64_t d : {2, 3, 4}) {
      SCOPED_TRACE(config(n, w, d) + " + undilated head window=1");
      const auto pattern = make(per_head_spec({window_spec(w, d), window_spec(1)}), n);
      std::vector<int32_t> dist;
      const ReachSummary s =
          g1_reach_bitset(uniform_stack(pattern, layers), i, LevelChoice::automatic, &dist);
      EXPECT_TRUE(mixing_depth(s).has_value());
      const int64_t k = d / 2;
      for (int64_t l = k + 1; l <= layers; ++l) {
        EXPECT_GT(s.coverage[l - 1], 2 * l * w + 1) << "layer " << l;
        const int64_t interior = (l - k) * d * w - k;
        for (int64_t o = -interior; o <= interior; ++o)
          ASSERT_LE(dist[i * n + (i + o)], l) << "layer " << l << " offset " << o;
      }
    }
}

// BigBird §3: a global token makes every pair j -> g -> i two hops apart.
TEST(ReachFacts, AnyGlobalTokenGivesDiameterAtMost2) {
  for (int64_t n : {5, 64, 300, 1000})
    for (int64_t g : {int64_t{0}, n / 2, n - 1}) {
      SCOPED_TRACE("seq_len=" + std::to_string(n) + " window=1 global=" + std::to_string(g));
      const ReachSummary s = g1_reach_bitset(stack_of(longformer_spec(1, {g}), n), -1);
      ASSERT_TRUE(diameter(s).has_value());
      EXPECT_LE(*diameter(s), 2);
    }
  // Even with no window at all: the star alone.
  const ReachSummary star = g1_reach_bitset(stack_of(longformer_spec(0, {3}), 100), -1);
  EXPECT_EQ(diameter(star), 2);
}

// BigBird ITC: the first and last blocks are global, so two layers connect everything
// (one when the blocks cover everything anyway, e.g. nb <= 4 with window blocks ±1).
TEST(ReachFacts, BigBirdItcMixesInAtMost2Layers) {
  for (int64_t n : {16, 100, 257, 1024, 4096})
    for (int64_t b : {8, 16, 64})
      for (int64_t r : {0, 1, 3}) {
        SCOPED_TRACE("seq_len=" + std::to_string(n) + " block_size=" + std::to_string(b) +
                     " num_random_blocks=" + std::to_string(r));
        const ReachSummary s = g1_reach_bitset(stack_of(bigbird_spec(b, r, 7), n, 1, 2), -1);
        ASSERT_TRUE(mixing_depth(s).has_value());
        EXPECT_LE(*mixing_depth(s), 2);
        EXPECT_GE(*mixing_depth(s), 1);
        EXPECT_EQ(s.level, Level::block);
      }
}

// BigBird §3 (expanders): window ±1 plus r = 2 random keys per query gives a mixing depth
// that grows like log n, not like n. Fixed seeds; the stated bound is c = 1.5:
// depth <= 1.5·log2(n) for n = 256 … 4096 (measured: docs/information-flow.md).
TEST(ReachFacts, RandomKeysMixInLogarithmicDepth) {
  constexpr double c = 1.5;
  for (int64_t n : {256, 512, 1024, 2048, 4096})
    for (uint64_t seed : {1, 2}) {
      SCOPED_TRACE("seq_len=" + std::to_string(n) + " window=1 num_random=2 seed=" +
                   std::to_string(seed));
      const ReachSummary s = g1_reach_bitset(stack_of(random_spec(1, 2, seed), n), -1);
      ASSERT_TRUE(mixing_depth(s).has_value());
      EXPECT_LE(*mixing_depth(s), c * std::log2(static_cast<double>(n)));
      EXPECT_LT(*mixing_depth(s), (n - 1) / 8);  // far below the window's n - 1
    }
}

}  // namespace
}  // namespace sparseattn::graph
