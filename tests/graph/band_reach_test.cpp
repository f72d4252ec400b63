// Serves contract §6.4: g2_reach_band (closed-form reach of band stacks) equals g1 exactly —
// every hop count, never, coverage and span — on random stacks of windows and dense layers,
// causal or not; band_nnz equals pattern_stats; band_first_reach equals the hop distance of
// (0, n - 1) that g1 measures; band_of refuses what is not a band.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "graph/band_reach.h"
#include "graph/reach.h"
#include "graph_test_util.h"
#include "pattern/pattern.h"
#include "core/error.h"

namespace sparseattn::graph {
namespace {

PatternSizes sizes(int64_t n) {
  PatternSizes z;
  z.seq_len_q = z.seq_len_k = n;
  return z;
}

PatternSpec dense_spec(bool causal) {
  PatternSpec s;
  s.kind = PatternKind::dense;
  s.causal = causal;
  return s;
}

// A random band layer: dense or a window (width 0 .. n + 2, beyond the sequence too).
PatternSpec random_band(std::mt19937_64& rng, int64_t n) {
  const bool causal = rng() % 2 == 0;
  if (rng() % 5 == 0) return dense_spec(causal);
  return testing::window_spec(static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 3)), 1, causal,
                              rng() % 2 ? 16 : 64);
}

TEST(BandReach, EqualsBitsetEngineOnRandomBandStacks) {
  std::mt19937_64 rng(20260601);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 150);
    const int64_t layers = 1 + static_cast<int64_t>(rng() % 5);
    LayerStack stack;
    std::vector<Band> bands;
    for (int64_t l = 0; l < layers; ++l) {
      const PatternSpec spec = random_band(rng, n);
      const auto band = band_of(spec, n);
      ASSERT_TRUE(band.has_value()) << describe(spec);
      bands.push_back(*band);
      stack.layers.push_back(std::make_shared<const Pattern>(materialize(spec, sizes(n))));
    }
    const int64_t token = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)) - 1;
    std::vector<int32_t> distances;
    const ReachSummary want = g1_reach_bitset(stack, token, LevelChoice::token, &distances);
    const ReachSummary got = g2_reach_band(bands, n, token);
    ASSERT_EQ(got, want) << "trial " << trial << ", n " << n << ", layers " << layers;
    const int32_t d = distances[static_cast<size_t>((n - 1) * n + 0)];  // target n-1, source 0
    const auto first = band_first_reach(bands, n);
    if (d < 0) EXPECT_FALSE(first.has_value()) << "trial " << trial;
    else EXPECT_EQ(first, std::optional<int64_t>(d)) << "trial " << trial;
  }
}

// contract §3.3: a (left, right) window is the band (min(L, n-1), min(R, n-1)), -1 = n - 1,
// causal R = 0; its reach equals the bitset engine's on random stacks of such layers.
TEST(BandReach, LeftRightWindowsAreAsymmetricBands) {
  PatternSpec s = testing::window_spec(0);
  s.window_left = 3;
  s.window_right = -1;
  auto b = band_of(s, 10);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->left, 3);
  EXPECT_EQ(b->right, 9);
  s.causal = true;
  b = band_of(s, 10);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->right, 0);
  std::mt19937_64 rng(20261201);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 90);
    const int64_t layers = 1 + static_cast<int64_t>(rng() % 4);
    LayerStack stack;
    std::vector<Band> bands;
    for (int64_t l = 0; l < layers; ++l) {
      PatternSpec spec = testing::window_spec(0, 1, rng() % 4 == 0);
      spec.window_left = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 3)) - 1;
      spec.window_right = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 3)) - 1;
      const auto band = band_of(spec, n);
      ASSERT_TRUE(band.has_value()) << describe(spec);
      bands.push_back(*band);
      stack.layers.push_back(std::make_shared<const Pattern>(materialize(spec, sizes(n))));
    }
    const int64_t token = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)) - 1;
    ASSERT_EQ(g2_reach_band(bands, n, token), g1_reach_bitset(stack, token, LevelChoice::token))
        << "trial " << trial << ", n " << n;
  }
}

// contract §6.4: stacks of bands and chunked layers (§3.14), in any order, causal or not:
// g2_reach_interval equals g1 on every count, and its first reach is g1's hop distance of
// (0, n - 1).
TEST(BandReach, IntervalEngineEqualsBitsetEngineWithChunkedLayers) {
  std::mt19937_64 rng(20261202);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 120);
    const int64_t layers = 1 + static_cast<int64_t>(rng() % 5);
    LayerStack stack;
    std::vector<IntervalLayer> ys;
    for (int64_t l = 0; l < layers; ++l) {
      PatternSpec spec;
      if (rng() % 2 == 0) {
        spec.kind = PatternKind::chunked;
        spec.chunk_size = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 3));
        spec.causal = rng() % 3 != 0;
      } else {
        spec = random_band(rng, n);
      }
      const auto y = interval_layer_of(spec, n);
      ASSERT_TRUE(y.has_value()) << describe(spec);
      ys.push_back(*y);
      stack.layers.push_back(std::make_shared<const Pattern>(materialize(spec, sizes(n))));
    }
    const int64_t token = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)) - 1;
    std::vector<int32_t> distances;
    const ReachSummary want = g1_reach_bitset(stack, token, LevelChoice::token, &distances);
    std::optional<int64_t> first;
    const ReachSummary got = g2_reach_interval(ys, n, token, &first);
    ASSERT_EQ(got, want) << "trial " << trial << ", n " << n << ", layers " << layers;
    const int32_t d = distances[static_cast<size_t>((n - 1) * n + 0)];
    if (d < 0) EXPECT_FALSE(first.has_value()) << "trial " << trial;
    else EXPECT_EQ(first, std::optional<int64_t>(d)) << "trial " << trial;
  }
}

TEST(BandReach, ChunkedNnzEqualsPatternStats) {
  for (const int64_t n : {1, 7, 64, 100, 257})
    for (const int64_t c : {1, 3, 8, 64, 1000})
      for (const bool causal : {false, true}) {
        PatternSpec spec;
        spec.kind = PatternKind::chunked;
        spec.chunk_size = c;
        spec.causal = causal;
        const auto y = interval_layer_of(spec, n);
        ASSERT_TRUE(y.has_value());
        EXPECT_EQ(interval_nnz(*y, n), pattern_stats(materialize(spec, sizes(n))).nnz)
            << "n " << n << " c " << c << " causal " << causal;
      }
}

// Llama 4's rule by hand: chunked causal layers alone never carry token 0 to a query of a
// later chunk; one dense causal layer does.
TEST(BandReach, ChunkedCausalStackNeverCrossesChunks) {
  const IntervalLayer chunk{Band{}, 8, true};
  const IntervalLayer dense{Band{31, 0}, 0, false};
  std::optional<int64_t> first;
  const ReachSummary alone = g2_reach_interval({chunk, chunk, chunk}, 32, 31, &first);
  EXPECT_FALSE(first.has_value());
  EXPECT_EQ(alone.coverage, (std::vector<int64_t>{8, 8, 8}));  // its own chunk only
  g2_reach_interval({chunk, chunk, chunk, dense}, 32, 31, &first);
  EXPECT_EQ(first, std::optional<int64_t>(4));
}

TEST(BandReach, PerHeadUnionOfBandsIsTheWidestBand) {
  const int64_t n = 100;
  PatternSpec s;
  s.kind = PatternKind::per_head;
  s.per_head = {testing::window_spec(3, 1, true), testing::window_spec(2)};
  const auto b = band_of(s, n);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->left, 3);
  EXPECT_EQ(b->right, 2);
  PatternSizes z = sizes(n);
  z.num_heads = 2;
  const LayerStack stack = uniform_stack(std::make_shared<const Pattern>(materialize(s, z)), 3);
  EXPECT_EQ(g2_reach_band({*b, *b, *b}, n, 7), g1_reach_bitset(stack, 7, LevelChoice::token));
}

TEST(BandReach, NnzEqualsPatternStats) {
  for (const int64_t n : {1, 2, 5, 64, 129, 300}) {
    for (const PatternSpec& spec :
         {testing::window_spec(0), testing::window_spec(3), testing::window_spec(3, 1, true),
          testing::window_spec(500, 1, true), dense_spec(true), dense_spec(false)}) {
      const auto b = band_of(spec, n);
      ASSERT_TRUE(b.has_value());
      EXPECT_EQ(band_nnz(*b, n), pattern_stats(materialize(spec, sizes(n))).nnz)
          << describe(spec) << " n " << n;
    }
  }
}

TEST(BandReach, NotABand) {
  EXPECT_FALSE(band_of(testing::window_spec(3, 2), 100));                // dilation
  EXPECT_FALSE(band_of(testing::longformer_spec(3, {0}), 100));          // a global token
  EXPECT_FALSE(band_of(testing::bigbird_spec(16, 1, 0), 100));           // block-sparse
  EXPECT_TRUE(band_of(testing::longformer_spec(3, {}), 100));            // no global: a band
}

// The facts the presets' answers rest on (docs/models.md), at 131072 tokens: a causal window
// w over L layers reaches back L * w; one dense causal layer reaches everything.
TEST(BandReach, LongSequenceClosedForms) {
  const int64_t n = 131072;
  EXPECT_EQ(band_first_reach(std::vector<Band>(32, Band{4096, 0}), n), 32);  // 32 * 4096 >= n - 1
  EXPECT_EQ(band_first_reach(std::vector<Band>(32, Band{4095, 0}), n), 33);  // one short: HF's width
  EXPECT_EQ(band_first_reach({Band{127, 0}, Band{n - 1, 0}}, n), 2);
  EXPECT_EQ(band_first_reach({Band{0, 0}}, n), std::nullopt);
  const ReachSummary s = g2_reach_band({Band{127, 0}, Band{n - 1, 0}}, n);
  EXPECT_EQ(s.never, n * (n - 1) / 2);  // the future never reaches the past
  EXPECT_THROW(g2_reach_band({}, n), InvalidArgument);
  EXPECT_THROW(g2_reach_band({Band{1, 0}}, n, n), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn::graph
