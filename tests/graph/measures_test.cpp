// Checks contract §6.2 (graph measures) and §5.1 (their bad input).
// The measures built on reachability: analytic cases, the path printer,
// spectral gap, rollout, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "graph/measures.h"
#include "graph/reach.h"
#include "graph/rollout.h"
#include "graph/spectral.h"
#include "graph_test_util.h"

namespace sparseattn::graph {
namespace {

using namespace testing;

// Window w = 1 is the path graph: (n - d) ordered pairs each way at distance d, so
// hops[d] = 2(n - d), the mean distance over i != j is (n + 1) / 3, and after L layers
// n + Σ_{d<=L} 2(n - d) pairs are connected.
TEST(Measures, PathGraphHopsMeanAndConnectedFractionAreAnalytic) {
  const int64_t n = 101;
  const ReachSummary s = g1_reach_bitset(stack_of(window_spec(1), n, 3), -1);
  ASSERT_EQ(static_cast<int64_t>(s.hops.size()), n);
  EXPECT_EQ(s.hops[0], n);
  for (int64_t d = 1; d < n; ++d) EXPECT_EQ(s.hops[d], 2 * (n - d)) << "d=" << d;
  EXPECT_NEAR(*mean_shortest_path(s), (n + 1) / 3.0, 1e-12);
  const std::vector<double> f = connected_fraction(s);
  ASSERT_EQ(static_cast<int64_t>(f.size()), n - 1);  // until it saturates, past 3 layers
  int64_t connected = n;
  for (int64_t L = 1; L < n; ++L) {
    connected += 2 * (n - L);
    EXPECT_DOUBLE_EQ(f[L - 1], static_cast<double>(connected) / (n * n)) << "L=" << L;
  }
  EXPECT_DOUBLE_EQ(f.back(), 1.0);
}

TEST(Measures, SingleTokenHasDepthZeroAndNoMeanPath) {
  const ReachSummary s = g1_reach_bitset(stack_of(window_spec(1), 1, 2), 0);
  EXPECT_EQ(mixing_depth(s), 0);
  EXPECT_FALSE(mean_shortest_path(s).has_value());
  EXPECT_EQ(s.coverage, (std::vector<int64_t>{1, 1}));
}

// Every step of the printed chain must be an edge of its layer: position k+1 attends k.
void expect_valid_path(const LayerStack& stack, const std::vector<int64_t>& path) {
  for (size_t k = 0; k + 1 < path.size(); ++k) {
    const Pattern& p = stack.layer(static_cast<int64_t>(k));
    bool edge = false;
    for (int64_t h = 0; h < p.sizes.num_heads; ++h)
      edge |= p.head(h).allowed(path[k + 1], path[k]);
    EXPECT_TRUE(edge) << path[k] << " -> " << path[k + 1];
  }
}

TEST(Measures, ShortestPathIsAChainOfAllowedEdgesOfMinimalLength) {
  const LayerStack window = stack_of(window_spec(2), 50);
  const std::vector<int64_t> p = shortest_path(window, 3, 14);
  ASSERT_EQ(p.size(), 1u + 6u);  // ceil(11 / 2) = 6 hops
  EXPECT_EQ(p.front(), 3);
  EXPECT_EQ(p.back(), 14);
  expect_valid_path(window, p);

  // A global token at 25 gives every pair a two-hop path through it.
  const LayerStack star = stack_of(longformer_spec(1, {25}), 50);
  EXPECT_EQ(shortest_path(star, 2, 47), (std::vector<int64_t>{2, 25, 47}));

  // Dilation 3 alone: 1 and 2 are in different residue classes, never connected.
  EXPECT_TRUE(shortest_path(stack_of(window_spec(1, 3), 30), 1, 2).empty());
  EXPECT_EQ(shortest_path(window, 7, 7), (std::vector<int64_t>{7}));
}

TEST(Measures, ShortestPathLengthEqualsHopDistanceIncludingBlockLevel) {
  const LayerStack bigbird = stack_of(bigbird_spec(8, 1, 4), 120, 1, 2);
  std::vector<int32_t> dist;
  g0_reach_reference(bigbird, -1, &dist);
  for (int64_t from : {0, 9, 50, 119})
    for (int64_t to : {1, 10, 51, 64, 118}) {
      const std::vector<int64_t> p = shortest_path(bigbird, from, to);
      EXPECT_EQ(static_cast<int64_t>(p.size()) - 1, dist[to * 120 + from]) << from << "->" << to;
      expect_valid_path(bigbird, p);
    }
}

// Dense: P = J/n has eigenvalues 1 and 0 (n-1 times): gap exactly 1. A window ring mixes
// slowly (gap near 0); BigBird's global and random blocks make an expander.
TEST(Spectral, DenseGapIsOneWindowSmallBigBirdLarge) {
  PatternSpec dense;
  EXPECT_NEAR(spectral_gap(*make(dense, 40)).gap, 1.0, 1e-10);
  const double window = spectral_gap(*make(window_spec(2), 400)).gap;
  const double bigbird = spectral_gap(*make(bigbird_spec(16, 2, 3), 400)).gap;
  EXPECT_LT(window, 1e-3);
  EXPECT_GT(bigbird, 0.3);
  EXPECT_TRUE(spectral_gap(*make(bigbird_spec(16, 2, 3), 400)).block_level);
}

// Known |λ₂| on the dense eigen path, by hand (no random pattern involved):
// - window w = 1 over 3 tokens: P = [[1/2, 1/2, 0], [1/3, 1/3, 1/3], [0, 1/2, 1/2]].
//   (1, 0, -1) is an eigenvector with λ = 1/2; the trace 4/3 = 1 + 1/2 + λ₃ gives
//   λ₃ = -1/6. So |λ₂| = 1/2, gap 1/2.
// - window w = 0: P = I, every eigenvalue 1: |λ₂| = 1, gap 0 (no mixing at all).
// - causal dense over n tokens: P is lower triangular with diagonal 1/(i+1), so its
//   eigenvalues are 1, 1/2, ..., 1/n: |λ₂| = 1/2 for every n >= 2.
TEST(Spectral, HandComputedSecondEigenvalues) {
  const SpectralGap three = spectral_gap_with(*make(window_spec(1), 3), "eigen-dense");
  EXPECT_NEAR(three.lambda2_modulus, 0.5, 1e-12);
  EXPECT_NEAR(three.gap, 0.5, 1e-12);
  EXPECT_EQ(three.method, "eigen-dense");
  const SpectralGap none = spectral_gap_with(*make(window_spec(0), 7), "eigen-dense");
  EXPECT_NEAR(none.lambda2_modulus, 1.0, 1e-12);
  EXPECT_NEAR(none.gap, 0.0, 1e-12);
  PatternSpec causal;
  causal.causal = true;
  for (int64_t n : {2, 5, 40}) {
    const SpectralGap g = spectral_gap_with(*make(causal, n), "eigen-dense");
    EXPECT_NEAR(g.lambda2_modulus, 0.5, 1e-9) << "n=" << n;
    EXPECT_NEAR(g.gap, 0.5, 1e-9) << "n=" << n;
  }
}

// |λ₂| is a modulus: a negative eigenvalue counts by its size. The complete bipartite
// graph K_{m,m} as an explicit mask (the first m tokens attend the last m and back), with
// the self edges: P = (A + I)/(m + 1), A's eigenvalues m, -m, 0, so P's are 1,
// (1 - m)/(m + 1) and 1/(m + 1). For m = 50: |λ₂| = 49/51 (the negative one), gap 2/51 —
// not 1 - 1/51, which the largest real part after λ₁ would give. Both methods.
TEST(Spectral, SecondEigenvalueIsTheLargestModulusEvenWhenNegative) {
  const int64_t m = 50, n = 2 * m;
  PatternSpec bipartite;
  bipartite.kind = PatternKind::explicit_mask;
  bipartite.mask = Tensor<uint8_t>({n, n}, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) bipartite.mask->data[i * n + j] = (i < m) != (j < m);
  const auto p = make(bipartite, n);
  for (const char* method : {"eigen-dense", "spectra-arnoldi"}) {
    const SpectralGap g = spectral_gap_with(*p, method);
    EXPECT_NEAR(g.lambda2_modulus, 49.0 / 51.0, 1e-9) << method;
    EXPECT_NEAR(g.gap, 2.0 / 51.0, 1e-9) << method;
  }
  EXPECT_NEAR(spectral_gap(*p).gap, 2.0 / 51.0, 1e-9);
}

// The two methods must agree where both run, on a directed pattern with complex
// eigenvalues (random keys), and the block-level gap must equal the token-level one.
TEST(Spectral, ArnoldiAgreesWithDenseAndBlockWithToken) {
  const auto random = make(random_spec(1, 2, 11), 300);
  EXPECT_NEAR(spectral_gap_with(*random, "spectra-arnoldi").gap,
              spectral_gap_with(*random, "eigen-dense").gap, 1e-8);
  PatternSpec as_tokens = bigbird_spec(16, 1, 2);
  const auto block = make(as_tokens, 200);
  // The same allowed set, given as an explicit mask: token level.
  PatternSpec explicit_mask;
  explicit_mask.kind = PatternKind::explicit_mask;
  explicit_mask.mask = dense_mask(block->head(0));
  const auto token = make(explicit_mask, 200);
  const SpectralGap g_block = spectral_gap(*block), g_token = spectral_gap(*token);
  EXPECT_TRUE(g_block.block_level);
  EXPECT_FALSE(g_token.block_level);
  EXPECT_NEAR(g_block.gap, g_token.gap, 1e-10);
}

// Rollout rows are probability distributions, and R_L[i][j] > 0 exactly when the
// reference says j reaches i within L layers.
TEST(Rollout, RowsSumToOneAndSupportEqualsReachability) {
  const int64_t n = 70;
  std::vector<LayerStack> stacks{
      stack_of(window_spec(2), n, 4), stack_of(window_spec(1, 3), n, 3),
      stack_of(bigbird_spec(8, 1, 2), n, 2, 3), stack_of(random_spec(1, 2, 5), n, 3, 2),
      uniform_stack(make(per_head_spec({window_spec(2, 3), window_spec(0)}), n), 3)};
  for (const LayerStack& stack : stacks) {
    SCOPED_TRACE(describe(stack.layer(0).spec));
    std::vector<int32_t> dist;
    g0_reach_reference(stack, -1, &dist);
    for (int64_t L = 1; L <= stack.num_layers(); ++L) {
      const Eigen::MatrixXd r = rollout_matrix(stack, L);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(r.row(i).sum(), 1.0, 1e-12) << "row " << i << " L=" << L;
        for (int64_t j = 0; j < n; ++j) {
          const bool reached = dist[i * n + j] >= 0 && dist[i * n + j] <= L;
          ASSERT_EQ(r(i, j) > 0.0, reached) << "i=" << i << " j=" << j << " L=" << L;
        }
      }
    }
    // The per-token summary is the entropy of the same row.
    const std::vector<double> even = rollout_evenness(stack, n / 2);
    const Eigen::MatrixXd last = rollout_matrix(stack, stack.num_layers());
    double h = 0.0;
    for (int64_t j = 0; j < n; ++j)
      if (last(n / 2, j) > 0) h -= last(n / 2, j) * std::log(last(n / 2, j));
    EXPECT_NEAR(even.back(), h / std::log(double(n)), 1e-12);
  }
}

// Exact values (graph/rollout.h: Ã = 0.5·W + 0.5·I, W uniform over the allowed keys).
// Window w = 1 over 3 tokens: A(0) = {0, 1}, A(1) = {0, 1, 2}, A(2) = {1, 2}, so
//   Ã = [[3/4, 1/4, 0], [1/6, 2/3, 1/6], [0, 1/4, 3/4]]                     (1 layer)
//   R_2 = Ã² = [[29/48, 17/48, 1/24], [17/72, 19/36, 17/72], [1/24, 17/48, 29/48]]
//   R_3 = Ã³ = [[295/576, 229/576, 52/576], [229/864, 406/864, 229/864], [52/576, 229/576, 295/576]]
// (each row worked out by hand; every row sums to 1). A rollout without the residual
// half (Ã = W) would give row 0 = [1/2, 1/2, 0] after one layer.
TEST(Rollout, ThreeWindowLayersOverThreeTokensHaveExactValues) {
  const LayerStack stack = stack_of(window_spec(1), 3, 3);
  const double want[3][3][3] = {
      {{3.0 / 4, 1.0 / 4, 0.0}, {1.0 / 6, 2.0 / 3, 1.0 / 6}, {0.0, 1.0 / 4, 3.0 / 4}},
      {{29.0 / 48, 17.0 / 48, 1.0 / 24}, {17.0 / 72, 19.0 / 36, 17.0 / 72}, {1.0 / 24, 17.0 / 48, 29.0 / 48}},
      {{295.0 / 576, 229.0 / 576, 52.0 / 576},
       {229.0 / 864, 406.0 / 864, 229.0 / 864},
       {52.0 / 576, 229.0 / 576, 295.0 / 576}}};
  for (int64_t L = 1; L <= 3; ++L) {
    const Eigen::MatrixXd r = rollout_matrix(stack, L);
    ASSERT_EQ(r.rows(), 3);
    ASSERT_EQ(r.cols(), 3);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(r(i, j), want[L - 1][i][j], 1e-15) << "L=" << L << " i=" << i << " j=" << j;
  }
}

TEST(Rollout, DenseSpreadsEvenlyWindowDoesNot) {
  PatternSpec dense;
  const std::vector<double> d = rollout_evenness(stack_of(dense, 256, 4), 128);
  const std::vector<double> w = rollout_evenness(stack_of(window_spec(1), 256, 4), 128);
  EXPECT_GT(d.back(), 0.95);
  EXPECT_LT(w.back(), 0.4);
}

// contract §5: bad input names the argument.
TEST(BadInput, ErrorsNameTheArgument) {
  const LayerStack s = stack_of(window_spec(1), 10);
  auto argument_of = [](auto&& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return e.argument();
    }
    return std::string("no error");
  };
  EXPECT_EQ(argument_of([&] { g1_reach_bitset(s, 10); }), "token");
  EXPECT_EQ(argument_of([&] { g0_reach_reference(s, -2); }), "token");
  EXPECT_EQ(argument_of([&] { shortest_path(s, -1, 3); }), "from");
  EXPECT_EQ(argument_of([&] { shortest_path(s, 1, 10); }), "to");
  EXPECT_EQ(argument_of([&] { uniform_stack(s.layers[0], 0); }), "layers");
  EXPECT_EQ(argument_of([&] { g1_reach_bitset(LayerStack{}, -1); }), "layers");
  PatternSpec padded = window_spec(1);
  padded.key_padding_mask = Tensor<uint8_t>({1, 10}, 1);
  EXPECT_EQ(argument_of([&] { g1_reach_bitset(stack_of(padded, 10), -1); }), "key_padding_mask");
  LayerStack uneven;
  uneven.layers = {make(window_spec(1), 10), make(window_spec(1), 12)};
  EXPECT_EQ(argument_of([&] { g1_reach_bitset(uneven, -1); }), "layers[1].seq_len");
}

}  // namespace
}  // namespace sparseattn::graph
