// Nyströmformer (Xiong et al. 2021, §3). Contract in nystrom.h: an approximation of
// a1_dense_masked with no pass/fail tolerance (registry: exact = false).
//
// Reading order: landmarks -> the three softmax kernels -> A⁺ -> o = (F A⁺)(B V).
#include "reference/approx/nystrom.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/approx/approx_common.h"
#include "reference/ladder_common.h"

namespace sparseattn {
namespace {

// Row-wise softmax of scores S [n, m] in place (stably, contract §2); returns each row's
// log-sum-exp (every entry is finite here: no mask enters an approximation).
std::vector<double> softmax_rows(Tensor<double>& S) {
  const int64_t n = S.dim(0), m = S.dim(1);
  std::vector<double> lse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double* row = S.ptr() + i * m;
    const double mx = *std::max_element(row, row + m);
    double l = 0.0;
    for (int64_t j = 0; j < m; ++j) l += std::exp(row[j] - mx);
    for (int64_t j = 0; j < m; ++j) row[j] = std::exp(row[j] - mx) / l;
    lse[i] = mx + std::log(l);
  }
  return lse;
}

// scale · X Yᵀ for X [n, d], Y [m, d] -> [n, m].
Tensor<double> scores(const Tensor<double>& X, const Tensor<double>& Y, double scale) {
  const int64_t n = X.dim(0), m = Y.dim(0), d = X.dim(1);
  Tensor<double> S({n, m}, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      S.data[i * m + j] = scale * ladder::dot(X.ptr() + i * d, Y.ptr() + j * d, d);
  return S;
}

// c·I − X for square X.
Tensor<double> shifted_identity(double c, const Tensor<double>& X) {
  const int64_t n = X.dim(0);
  Tensor<double> Y({n, n}, 0.0);
  for (int64_t i = 0; i < n * n; ++i) Y.data[i] = -X.data[i];
  for (int64_t i = 0; i < n; ++i) Y.data[i * n + i] += c;
  return Y;
}

}  // namespace

Tensor<double> segment_means(const Tensor<double>& x, int64_t num_landmarks) {
  const int64_t n = x.dim(0), d = x.dim(1), c = num_landmarks;
  require(c >= 1 && c <= n, "num_landmarks", c,
          "must be in [1, " + to_text(n) + "] (at most one landmark per token)");
  Tensor<double> means({c, d}, 0.0);
  for (int64_t l = 0; l < c; ++l) {
    // Segment l: rows [l·n/c, (l+1)·n/c) rounded down; sizes differ by at most one.
    const int64_t begin = l * n / c, end = (l + 1) * n / c;
    for (int64_t i = begin; i < end; ++i)
      for (int64_t e = 0; e < d; ++e) means.data[l * d + e] += x.data[i * d + e];
    for (int64_t e = 0; e < d; ++e) means.data[l * d + e] /= static_cast<double>(end - begin);
  }
  return means;
}

Tensor<double> nystrom_iterative_pinv(const Tensor<double>& A, int64_t iterations) {
  require(A.rank() == 2 && A.dim(0) == A.dim(1) && A.dim(0) >= 1, "A", shape_text(A.shape),
          "must be square and non-empty");
  require(iterations >= 0, "pinv_iterations", iterations, "must be >= 0");
  const int64_t c = A.dim(0);
  // Z₀ = Aᵀ / (‖A‖₁ ‖A‖∞): small enough that ‖I − A Z₀‖ < 1, so the iteration converges.
  double norm1 = 0.0, norm_inf = 0.0;
  for (int64_t i = 0; i < c; ++i) {
    double col = 0.0, row = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      col += std::abs(A.data[j * c + i]);
      row += std::abs(A.data[i * c + j]);
    }
    norm1 = std::max(norm1, col);
    norm_inf = std::max(norm_inf, row);
  }
  Tensor<double> Z({c, c}, 0.0);
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < c; ++j) Z.data[i * c + j] = A.data[j * c + i] / (norm1 * norm_inf);
  for (int64_t it = 0; it < iterations; ++it) {
    const Tensor<double> AZ = approx::matmul(A, Z);
    // Innermost first: 7I − AZ, then 15I − AZ(7I − AZ), then 13I − AZ(15I − …).
    const Tensor<double> inner = shifted_identity(15.0, approx::matmul(AZ, shifted_identity(7.0, AZ)));
    const Tensor<double> outer = shifted_identity(13.0, approx::matmul(AZ, inner));
    Z = approx::matmul(Z, outer);
    for (double& z : Z.data) z *= 0.25;
  }
  return Z;
}

Tensor<double> exact_pinv(const Tensor<double>& A) {
  require(A.rank() == 2 && A.dim(0) >= 1 && A.dim(1) >= 1, "A", shape_text(A.shape),
          "must be a non-empty matrix");
  const int64_t n = A.dim(0), m = A.dim(1);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> a(A.ptr(), n, m);
  const RowMajor pinv = Eigen::CompleteOrthogonalDecomposition<RowMajor>(a).pseudoInverse();
  Tensor<double> Z({m, n}, 0.0);
  Eigen::Map<RowMajor>(Z.ptr(), m, n) = pinv;
  return Z;
}

AttentionResult nystrom_attention(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Pattern& pattern,
                                  const double* scale, const NystromOptions& options,
                                  int64_t* undefined_lse_rows) {
  approx::require_dense(pattern, "nystrom");
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t c = options.num_landmarks;
  require(c >= 1 && c <= std::min(Lq, Lk), "num_landmarks", c,
          "must be in [1, min(seq_len_q, seq_len_k) = " + to_text(std::min(Lq, Lk)) + "]");
  require(options.pinv_iterations >= 0, "pinv_iterations", options.pinv_iterations,
          "must be >= 0");

  AttentionResult r = ladder::empty_result(s);
  int64_t undefined = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const Tensor<double> Q = approx::scaled_rows(q, s, b, h, Lq, D, 1.0);
      const Tensor<double> K = approx::scaled_rows(k, s, b, h, Lk, D, 1.0);
      const Tensor<double> V = approx::scaled_rows(v, s, b, h, Lk, Dv, 1.0);
      // 1. Landmarks.
      const Tensor<double> Qt = segment_means(Q, c), Kt = segment_means(K, c);
      // 2. The three softmax kernels, with their row log-sum-exps (for lse).
      Tensor<double> F = scores(Q, Kt, call.scale), A = scores(Qt, Kt, call.scale),
                     B = scores(Qt, K, call.scale);
      const std::vector<double> lseF = softmax_rows(F), lseA = softmax_rows(A),
                                lseB = softmax_rows(B);
      // 3. A⁺, then o = (F A⁺)(B V): never an [Lq, Lk] matrix.
      const Tensor<double> Z = options.pinv == PinvMethod::iterative
                                   ? nystrom_iterative_pinv(A, options.pinv_iterations)
                                   : exact_pinv(A);
      const Tensor<double> FZ = approx::matmul(F, Z);                 // [Lq, c]
      const Tensor<double> O = approx::matmul(FZ, approx::matmul(B, V));  // [Lq, Dv]
      std::copy(O.data.begin(), O.data.end(), r.o.ptr() + ladder::offset(s, b, h, Lq, 0, Dv));
      // 4. lse_i = lseF_i + log((F A⁺ w)_i), w_l = exp(lseB_l − lseA_l) (nystrom.h).
      std::vector<double> w(static_cast<size_t>(c));
      for (int64_t l = 0; l < c; ++l) w[l] = std::exp(lseB[l] - lseA[l]);
      for (int64_t i = 0; i < Lq; ++i) {
        const double estimate = ladder::dot(FZ.ptr() + i * c, w.data(), c);
        double& lse = r.lse.data[ladder::offset(s, b, h, Lq, i, 1)];
        if (estimate > 0.0) {
          lse = lseF[i] + std::log(estimate);
        } else {
          lse = std::numeric_limits<double>::quiet_NaN();  // no estimate exists (nystrom.h)
          ++undefined;
        }
      }
    }
  }
  if (undefined_lse_rows) *undefined_lse_rows = undefined;
  return r;
}

}  // namespace sparseattn
