// Checks contract §2.5 (quantities derived from attention: mass kept, distance).
// Locality analysis (realdata/locality.h) on hand-made q, k whose attention is known in
// closed form, and against the float64 oracle's lse on random data.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "realdata/locality.h"
#include "reference/attention.h"

namespace sparseattn::realdata {
namespace {

PatternSpec window_spec(int64_t w) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = w;
  return s;
}

Pattern make_pattern(const PatternSpec& spec, int64_t heads, int64_t n) {
  PatternSizes sizes;
  sizes.num_heads = heads;
  sizes.seq_len_q = sizes.seq_len_k = n;
  return materialize(spec, sizes);
}

// q = 0: every query attends uniformly, so every mass equals its uniform share and every
// bias ratio is 1. Mean distance for n = 10: Σ_i Σ_j |i − j| / n² = 330 / 100.
TEST(Locality, UniformAttentionHasBiasOne) {
  const int64_t n = 10, d = 3;
  Tensor<double> q({1, 1, n, d}, 0.0), k({1, 1, n, d});
  for (int64_t i = 0; i < k.numel(); ++i) k.data[i] = std::cos(1.3 * i);
  const Pattern pattern = make_pattern(window_spec(2), 1, n);
  const auto heads = analyze_locality(q, k, pattern, {0, 2, 20}, nullptr);
  ASSERT_EQ(heads.size(), 1u);
  const HeadLocality& h = heads[0];
  // Window w = 2 on n = 10: rows 0, 9 see 3 keys; 1, 8 see 4; rows 2..7 see 5: 44 in all.
  EXPECT_NEAR(h.pattern_mass, 44.0 / 100, 1e-15);
  EXPECT_NEAR(h.pattern_uniform, 44.0 / 100, 1e-15);
  EXPECT_NEAR(h.pattern_bias, 1.0, 1e-14);
  EXPECT_NEAR(h.pattern_mass_min_row, 3.0 / 10, 1e-15);
  EXPECT_NEAR(h.mean_distance, 3.3, 1e-14);
  ASSERT_EQ(h.windows.size(), 3u);
  EXPECT_NEAR(h.windows[0].mass, 0.1, 1e-15);   // w = 0: the key itself
  EXPECT_NEAR(h.windows[1].mass, 0.44, 1e-15);  // the pattern's own window
  EXPECT_NEAR(h.windows[2].mass, 1.0, 1e-15);   // w >= n: everything
  for (const WindowMass& w : h.windows) EXPECT_NEAR(w.bias, 1.0, 1e-14);
}

// k_j = e_j, q_i = c·sqrt(d)·e_i: score c on the diagonal, 0 elsewhere, so
// P_ii = e^c / (e^c + n − 1) and P_ij = 1 / (e^c + n − 1) for j != i.
TEST(Locality, PeakedDiagonalAttentionMatchesClosedForm) {
  const int64_t n = 8, d = 8;
  const double c = 3.0, z = std::exp(c) + n - 1;
  Tensor<double> q({1, 1, n, d}, 0.0), k({1, 1, n, d}, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    k.data[i * d + i] = 1.0;
    q.data[i * d + i] = c * std::sqrt(static_cast<double>(d));
  }
  const Pattern pattern = make_pattern(window_spec(1), 1, n);
  const HeadLocality h = analyze_locality(q, k, pattern, {0, 1}, nullptr).at(0);
  // w = 0: only the diagonal.
  EXPECT_NEAR(h.windows[0].mass, std::exp(c) / z, 1e-15);
  EXPECT_NEAR(h.windows[0].uniform, 1.0 / n, 1e-15);
  EXPECT_NEAR(h.windows[0].bias, std::exp(c) / z * n, 1e-13);
  // w = 1: rows 0 and 7 hold 2 keys, rows 1..6 hold 3: Σ (|W_i| − 1) = 2·1 + 6·2 = 14.
  const double mass = (n * std::exp(c) + 14) / (n * z);
  const double uniform = 22.0 / (n * n);
  EXPECT_NEAR(h.windows[1].mass, mass, 1e-15);
  EXPECT_NEAR(h.windows[1].uniform, uniform, 1e-15);
  EXPECT_NEAR(h.windows[1].bias, mass / uniform, 1e-13);
  EXPECT_NEAR(h.pattern_mass, mass, 1e-15);  // the pattern is the same w = 1 window
  EXPECT_NEAR(h.pattern_mass_min_row, (std::exp(c) + 1) / z, 1e-15);
  // Distance: the diagonal contributes 0; row i contributes Σ_j |i − j| / z.
  // Σ_i Σ_j |i − j| for n = 8 is 2·Σ_{t=1}^{7} t·(8 − t) = 168.
  EXPECT_NEAR(h.mean_distance, 168.0 / (n * z), 1e-14);
}

// The same number two ways: pattern_mass from the dense softmax, and
// mean_i exp(lse_A(i) − lse_dense(i)) from the float64 oracle (a1_dense_masked).
TEST(Locality, PatternMassAgreesWithTheOracleLse) {
  const int64_t H = 2, n = 37, d = 5;
  Tensor<double> q({1, H, n, d}), k({1, H, n, d}), v({1, H, n, d});
  for (int64_t i = 0; i < q.numel(); ++i) {
    q.data[i] = std::sin(0.7 * i) * 2.0;
    k.data[i] = std::cos(0.3 * i + 1.0) * 2.0;
    v.data[i] = std::sin(0.11 * i);
  }
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = 3;
  lf.dilation = 2;
  lf.global = {0, 20};
  const Pattern pattern = make_pattern(lf, H, n);
  const Pattern dense = make_pattern(PatternSpec{}, H, n);
  const AttentionResult a = a1_dense_masked(q, k, v, pattern, nullptr);
  const AttentionResult full = a1_dense_masked(q, k, v, dense, nullptr);
  const auto heads = analyze_locality(q, k, pattern, default_windows(), nullptr);
  for (int64_t h = 0; h < H; ++h) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(a.lse.data[h * n + i] - full.lse.data[h * n + i]);
    EXPECT_NEAR(heads[h].pattern_mass, sum / n, 1e-13) << "head " << h;
    EXPECT_GT(heads[h].pattern_mass, 0.0);
    EXPECT_LT(heads[h].pattern_mass, 1.0);
  }
}

TEST(Locality, BadInputNamesTheArgument) {
  Tensor<double> q({1, 2, 6, 4}, 0.0), k({1, 2, 6, 4}, 0.0), k3({1, 2, 6, 3}, 0.0);
  const Pattern pattern = make_pattern(window_spec(1), 2, 6);
  const Pattern other = make_pattern(window_spec(1), 2, 7);
  auto arg = [](auto&& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return e.argument();
    }
    return std::string("<no throw>");
  };
  EXPECT_EQ(arg([&] { analyze_locality(q, k, pattern, {-1}, nullptr); }), "windows");
  EXPECT_EQ(arg([&] { analyze_locality(q, k3, pattern, {1}, nullptr); }), "k head_dim");
  EXPECT_EQ(arg([&] { analyze_locality(q, k, other, {1}, nullptr); }), "pattern");
  const double nan = std::nan("");
  EXPECT_EQ(arg([&] { analyze_locality(q, k, pattern, {1}, &nan); }), "scale");
}

}  // namespace
}  // namespace sparseattn::realdata
