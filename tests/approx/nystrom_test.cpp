// Checks contract §4.8 (approximations): Nyströmformer.
// Nyströmformer (reference/approx/nystrom.h): segment means by hand, the pseudo-inverse
// against its definition, the limit c = seq_len where Nyström is exact, the paper's
// iteration converging to Eigen's exact A⁺, the error falling as landmarks grow, and bad
// input rejected by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/error.h"
#include "reference/approx/approx_error.h"
#include "reference/approx/nystrom.h"
#include "reference/attention.h"
#include "tests/approx/approx_inputs.h"

namespace sparseattn {
namespace {

using testing_approx::argument_of;
using testing_approx::dense;
using testing_approx::gaussian_tensor;

Tensor<double> matrix(int64_t n, int64_t m, std::vector<double> values) {
  Tensor<double> t({n, m}, 0.0);
  t.data = std::move(values);
  return t;
}

Tensor<double> product(const Tensor<double>& A, const Tensor<double>& B) {
  const int64_t n = A.dim(0), p = A.dim(1), m = B.dim(1);
  Tensor<double> C({n, m}, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < p; ++t)
      for (int64_t j = 0; j < m; ++j) C.data[i * m + j] += A.data[i * p + t] * B.data[t * m + j];
  return C;
}

double max_abs_difference(const Tensor<double>& a, const Tensor<double>& b) {
  double e = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) e = std::max(e, std::abs(a.data[i] - b.data[i]));
  return e;
}

// Row i of x is (i, 2i). 10 rows, 3 landmarks: segments [0,3) [3,6) [6,10) (the last one
// takes the remainder), means 1, 4 and 7.5. 10 landmarks: every row is its own mean.
TEST(SegmentMeans, HandComputedIncludingALengthThatIsNotAMultiple) {
  Tensor<double> x({10, 2}, 0.0);
  for (int64_t i = 0; i < 10; ++i) x.data[2 * i] = i, x.data[2 * i + 1] = 2 * i;
  EXPECT_EQ(segment_means(x, 3).data, (std::vector<double>{1, 2, 4, 8, 7.5, 15}));
  EXPECT_EQ(segment_means(x, 10).data, x.data);
  EXPECT_EQ(segment_means(x, 1).data, (std::vector<double>{4.5, 9}));
}

// A = u uᵀ with u = (1, 2): rank 1, A⁺ = A / ‖u‖⁴ = A / 25 (and not an inverse).
TEST(ExactPinv, RankOneMatrixHasTheClosedFormPseudoInverse) {
  const Tensor<double> A = matrix(2, 2, {1, 2, 2, 4});
  const Tensor<double> Z = exact_pinv(A);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(Z.data[i], A.data[i] / 25.0, 1e-15);
  // The Moore–Penrose conditions AZA = A, ZAZ = Z.
  EXPECT_LT(max_abs_difference(product(product(A, Z), A), A), 1e-14);
  EXPECT_LT(max_abs_difference(product(product(Z, A), Z), Z), 1e-15);
}

// ‖I − A Z_j‖_F never grows (until rounding) along the paper's iteration, and it reaches Eigen's exact A⁺
// — here on A = softmax(s Q̃ K̃ᵀ) of 16 Gaussian landmarks, the matrix the method inverts.
TEST(IterativePinv, ConvergesMonotonicallyToTheExactPseudoInverse) {
  const int64_t c = 16, d = 16;
  const Tensor<double> Qt = gaussian_tensor({c, d}, 31), Kt = gaussian_tensor({c, d}, 32);
  Tensor<double> A({c, c}, 0.0);
  for (int64_t i = 0; i < c; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      double s = 0.0;
      for (int64_t e = 0; e < d; ++e) s += Qt.data[i * d + e] * Kt.data[j * d + e];
      sum += A.data[i * c + j] = std::exp(s / std::sqrt(double(d)));
    }
    for (int64_t j = 0; j < c; ++j) A.data[i * c + j] /= sum;
  }
  const Tensor<double> exact = exact_pinv(A);
  double previous = INFINITY;
  for (int64_t it = 0; it <= 30; ++it) {
    const Tensor<double> AZ = product(A, nystrom_iterative_pinv(A, it));
    double residual = 0.0;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < c; ++j) residual += std::pow((i == j) - AZ.data[i * c + j], 2);
    residual = std::sqrt(residual);
    // Until rounding (≈1e-14 here) is all that is left, the residual never grows.
    if (previous > 1e-12) {
      EXPECT_LE(residual, previous) << "iteration " << it;
    }
    previous = residual;
  }
  double scale = 0.0;
  for (double z : exact.data) scale = std::max(scale, std::abs(z));
  EXPECT_LT(max_abs_difference(nystrom_iterative_pinv(A, 30), exact), 1e-9 * scale);
}

// With one landmark per token (c = seq_len) the landmarks are the tokens, F = A = B =
// softmax(s Q Kᵀ) and o = P P⁺ P V = P V: Nyström reproduces exact softmax attention —
// o and lse — to rounding when A⁺ is exact. Two heads, head_dim_v != head_dim, and a
// non-default scale.
TEST(NystromAttention, OneLandmarkPerTokenWithExactPinvReproducesTheOracle) {
  const int64_t n = 24;
  const Pattern pattern = dense(2, n, n);
  const Tensor<double> q = gaussian_tensor({1, 2, n, 8}, 41), k = gaussian_tensor({1, 2, n, 8}, 42),
                       v = gaussian_tensor({1, 2, n, 5}, 43);
  for (double scale : {std::nan(""), 0.5}) {
    const double* s = std::isnan(scale) ? nullptr : &scale;
    const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, s);
    const AttentionResult r =
        nystrom_attention(q, k, v, pattern, s, NystromOptions{n, PinvMethod::exact, 6});
    const Tolerance limit{1e-10, 1e-10};
    const CheckReport o = check_close(r.o, oracle.o, limit);
    const CheckReport lse = check_close(r.lse, oracle.lse, limit);
    EXPECT_TRUE(o.pass) << report_json(o, "o", limit);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", limit);
  }
}

// The lse correction where it is not 1 (landmarks != tokens), with an exact answer:
// rank-1 keys q_i = (1, 0), k_j = (j, 0), j = 0..3, scale 1, ONE landmark, exact A⁺.
// Q̃ = (1, 0), K̃ = (1.5, 0): every score of F and A is 1.5, so F = A = [1], lseF_i =
// lseA = 1.5, and lseB = log Σ_j e^j. lse_i = lseF_i + log(F A⁺ w)_i with w = exp(lseB −
// lseA): lse_i = lseB = log(1 + e + e² + e³) = 3.4401896985..., the oracle's value (all
// queries are equal, so Nyström is exact here; o = softmax(j)·v as well). A flipped sign
// in the correction (w = exp(lseA − lseB)) would give 3 − 3.44 = −0.44.
TEST(NystromAttention, RankOneKeysOneLandmarkGiveTheExactLse) {
  const int64_t n = 4;
  const Pattern pattern = dense(1, n, n);
  Tensor<double> q({1, 1, n, 2}, 0.0), k({1, 1, n, 2}, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    q.data[i * 2] = 1.0;
    k.data[i * 2] = static_cast<double>(i);
  }
  const Tensor<double> v = gaussian_tensor({1, 1, n, 3}, 44);
  const double scale = 1.0;
  const AttentionResult r =
      nystrom_attention(q, k, v, pattern, &scale, NystromOptions{1, PinvMethod::exact, 6});
  const double e = std::exp(1.0);
  const double want = std::log(1.0 + e + e * e + e * e * e);
  EXPECT_NEAR(want, 3.44019, 5e-6);
  const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, &scale);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(r.lse.data[i], want, 1e-12) << "row " << i;
    EXPECT_NEAR(oracle.lse.data[i], want, 1e-12) << "row " << i;
  }
  const Tolerance limit{1e-12, 1e-12};
  const CheckReport o = check_close(r.o, oracle.o, limit);
  EXPECT_TRUE(o.pass) << report_json(o, "o", limit);
}

// Error against the oracle (mean row-relative error of o, averaged over 3 Gaussian
// inputs) with the paper's 6-iteration A⁺ falls as landmarks grow 4 → 16 → 64. The exact
// A⁺ is NOT monotone in c (measured: c = 64 is worse than c = 16 — softmax(s Q̃ K̃ᵀ)
// becomes ill-conditioned and its exact inverse amplifies the landmark error; the
// truncated iteration acts as a regularizer), but at c = seq_len it is exact.
TEST(NystromAttention, ErrorAgainstOracleFallsAsLandmarksGrow) {
  const int64_t n = 256, d = 16;
  const Pattern pattern = dense(1, n, n);
  const std::vector<int64_t> landmarks = {4, 16, 64};
  std::vector<double> error(landmarks.size(), 0.0);
  double exact_limit = 0.0;
  for (uint64_t input = 1; input <= 3; ++input) {
    const Tensor<double> q = gaussian_tensor({1, 1, n, d}, 50 + 3 * input);
    const Tensor<double> k = gaussian_tensor({1, 1, n, d}, 51 + 3 * input);
    const Tensor<double> v = gaussian_tensor({1, 1, n, d}, 52 + 3 * input);
    const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, nullptr);
    for (size_t t = 0; t < landmarks.size(); ++t) {
      const AttentionResult r = nystrom_attention(q, k, v, pattern, nullptr, NystromOptions{landmarks[t]});
      error[t] += approx_error(r.o, oracle.o).mean_row_rel / 3.0;
    }
    const AttentionResult full =
        nystrom_attention(q, k, v, pattern, nullptr, NystromOptions{n, PinvMethod::exact, 6});
    exact_limit = std::max(exact_limit, approx_error(full.o, oracle.o).max_abs);
  }
  for (size_t t = 1; t < landmarks.size(); ++t)
    EXPECT_LT(error[t], error[t - 1]) << "c = " << landmarks[t];
  EXPECT_LT(exact_limit, 1e-10);  // c = seq_len with the exact A⁺
}

TEST(NystromAttention, BadParametersAreRejectedByName) {
  // seq_len_q = 12 < seq_len_k = 20: at most 12 landmarks.
  const Tensor<double> q = gaussian_tensor({1, 1, 12, 4}, 1), k = gaussian_tensor({1, 1, 20, 4}, 2),
                       v = gaussian_tensor({1, 1, 20, 4}, 3);
  const Pattern ok = dense(1, 12, 20);
  auto run = [&](const Pattern& p, NystromOptions o) { nystrom_attention(q, k, v, p, nullptr, o); };
  EXPECT_EQ(argument_of([&] { run(ok, NystromOptions{0}); }), "num_landmarks");
  EXPECT_EQ(argument_of([&] { run(ok, NystromOptions{-1}); }), "num_landmarks");
  EXPECT_EQ(argument_of([&] { run(ok, NystromOptions{13}); }), "num_landmarks");
  EXPECT_EQ(argument_of([&] { run(ok, NystromOptions{12, PinvMethod::iterative, -1}); }),
            "pinv_iterations");
  EXPECT_EQ(argument_of([&] { run(ok, NystromOptions{12}); }), "");  // the largest allowed
  EXPECT_EQ(argument_of([] { segment_means(Tensor<double>({5, 2}, 0.0), 6); }), "num_landmarks");
  EXPECT_EQ(argument_of([] { nystrom_iterative_pinv(Tensor<double>({2, 3}, 0.0), 6); }), "A");
  PatternSpec window;
  window.kind = PatternKind::window;
  window.window = 2;
  PatternSpec causal;
  causal.causal = true;
  for (const PatternSpec& spec : {window, causal}) {
    const Pattern p = materialize(spec, {1, 1, 12, 20});
    EXPECT_EQ(argument_of([&] { run(p, NystromOptions{4}); }), "pattern (for nystrom)")
        << describe(spec);
  }
}

}  // namespace
}  // namespace sparseattn
