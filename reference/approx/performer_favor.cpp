// Performer FAVOR+ (Choromanski et al. 2021). Contract in performer_favor.h: an
// approximation of a1_dense_masked with no pass/fail tolerance (registry: exact = false).
//
// Reading order: the projection W (ORF) -> φ (exponents, then features) -> attention.
#include "reference/approx/performer_favor.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/approx/approx_common.h"
#include "reference/approx/gaussian.h"
#include "reference/ladder_common.h"
#include "pattern/prng.h"

namespace sparseattn {

Tensor<double> favor_projection(int64_t num_features, int64_t head_dim, uint64_t seed,
                                uint64_t head, bool orthogonal) {
  require(num_features >= 1, "num_features", num_features, "must be >= 1");
  require(head_dim >= 1, "head_dim", head_dim, "must be >= 1");
  const int64_t m = num_features, d = head_dim;
  Tensor<double> W({m, d}, 0.0);
  for (int64_t block = 0; block * d < m; ++block) {
    const int64_t rows = std::min(d, m - block * d);  // the last block may be partial
    const uint64_t dir_key = prng_stream_key(seed, head, 2 * static_cast<uint64_t>(block));
    const uint64_t norm_key = prng_stream_key(seed, head, 2 * static_cast<uint64_t>(block) + 1);
    double* G = W.ptr() + block * d * d;  // this block's rows of W
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t e = 0; e < d; ++e)
        G[r * d + e] = standard_normal(dir_key, static_cast<uint64_t>(r * d + e));
    if (!orthogonal) continue;  // i.i.d. rows: already N(0, I_d)
    // Modified Gram–Schmidt: row r loses its components along the (unit) rows 0..r-1,
    // then is normalized. rows <= d Gaussian vectors are independent with probability 1.
    for (int64_t r = 0; r < rows; ++r) {
      double* gr = G + r * d;
      for (int64_t p = 0; p < r; ++p) {
        const double c = ladder::dot(gr, G + p * d, d);
        for (int64_t e = 0; e < d; ++e) gr[e] -= c * G[p * d + e];
      }
      const double norm = std::sqrt(ladder::dot(gr, gr, d));
      for (int64_t e = 0; e < d; ++e) gr[e] /= norm;
    }
    // Only now (every direction is unit) rescale each row to the length of an
    // independent N(0, I_d) vector (chi_d), so its marginal law is N(0, I_d) again (§2.4).
    for (int64_t r = 0; r < rows; ++r) {
      double chi2 = 0.0;
      for (int64_t e = 0; e < d; ++e) {
        const double z = standard_normal(norm_key, static_cast<uint64_t>(r * d + e));
        chi2 += z * z;
      }
      for (int64_t e = 0; e < d; ++e) G[r * d + e] *= std::sqrt(chi2);
    }
  }
  return W;
}

Tensor<double> favor_exponents(const Tensor<double>& x, const Tensor<double>& W) {
  const int64_t rows = x.dim(0), d = x.dim(1), m = W.dim(0);
  require(W.dim(1) == d, "W", shape_text(W.shape), "must be [num_features, " + to_text(d) + "]");
  Tensor<double> e({rows, m}, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* xi = x.ptr() + i * d;
    const double half_sq_norm = 0.5 * ladder::dot(xi, xi, d);
    for (int64_t f = 0; f < m; ++f)
      e.data[i * m + f] = ladder::dot(W.ptr() + f * d, xi, d) - half_sq_norm;
  }
  return e;
}

Tensor<double> favor_features(const Tensor<double>& exponents, const std::vector<double>& shift) {
  const int64_t rows = exponents.dim(0), m = exponents.dim(1);
  require(static_cast<int64_t>(shift.size()) == rows, "shift", shift.size(),
          "must have one entry per row (" + to_text(rows) + ")");
  Tensor<double> phi({rows, m}, 0.0);
  const double inv_sqrt_m = 1.0 / std::sqrt(static_cast<double>(m));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t f = 0; f < m; ++f)
      phi.data[i * m + f] = std::exp(exponents.data[i * m + f] - shift[i]) * inv_sqrt_m;
  return phi;
}

AttentionResult performer_favor(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale, const FavorOptions& options) {
  approx::require_dense(pattern, "performer_favor");
  require(options.num_features >= 1, "num_features", options.num_features, "must be >= 1");
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t m = options.num_features;
  const double root_scale = std::sqrt(call.scale);  // s_ij = <√scale q_i, √scale k_j>

  AttentionResult r = ladder::empty_result(s);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const Tensor<double> W = favor_projection(m, D, options.seed, static_cast<uint64_t>(h),
                                                options.orthogonal);
      const Tensor<double> qs = approx::scaled_rows(q, s, b, h, Lq, D, root_scale);
      const Tensor<double> ks = approx::scaled_rows(k, s, b, h, Lk, D, root_scale);

      // 1. Key features, shifted by the largest exponent over all keys and features: one
      //    constant, so it cancels between numerator and normalizer.
      const Tensor<double> ek = favor_exponents(ks, W);  // [Lk, m]
      const double key_shift = *std::max_element(ek.data.begin(), ek.data.end());
      const Tensor<double> phi_k =
          favor_features(ek, std::vector<double>(static_cast<size_t>(Lk), key_shift));

      // 2. φ(K)ᵀ V [m, Dv] and φ(K)ᵀ 1 [m]: the keys' summary, O(Lk · m · Dv) once.
      std::vector<double> KV(static_cast<size_t>(m * Dv), 0.0), K1(static_cast<size_t>(m), 0.0);
      for (int64_t j = 0; j < Lk; ++j) {
        const double* vj = v.ptr() + ladder::offset(s, b, h, Lk, j, Dv);
        for (int64_t f = 0; f < m; ++f) {
          const double p = phi_k.data[j * m + f];
          K1[f] += p;
          for (int64_t e = 0; e < Dv; ++e) KV[f * Dv + e] += p * vj[e];
        }
      }

      // 3. Query features, each row shifted by its own largest exponent (a per-row
      //    constant, cancels in D⁻¹); then o_i = φ(q'_i)ᵀ KV / φ(q'_i)ᵀ K1.
      const Tensor<double> eq = favor_exponents(qs, W);  // [Lq, m]
      std::vector<double> query_shift(static_cast<size_t>(Lq));
      for (int64_t i = 0; i < Lq; ++i)
        query_shift[i] = *std::max_element(eq.ptr() + i * m, eq.ptr() + (i + 1) * m);
      const Tensor<double> phi_q = favor_features(eq, query_shift);
      for (int64_t i = 0; i < Lq; ++i) {
        double* oi = r.o.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        double normalizer = 0.0;
        for (int64_t f = 0; f < m; ++f) {
          const double p = phi_q.data[i * m + f];
          normalizer += p * K1[f];
          for (int64_t e = 0; e < Dv; ++e) oi[e] += p * KV[f * Dv + e];
        }
        if (!(normalizer > 0.0))
          throw RuntimeError("performer_favor: the estimated softmax normalizer of query " +
                             to_text(i) + " (batch " + to_text(b) + ", head " + to_text(h) +
                             ") underflowed to 0; its output would be undefined");
        for (int64_t e = 0; e < Dv; ++e) oi[e] /= normalizer;
        // Undo both shifts: φ was multiplied by exp(-query_shift) and exp(-key_shift).
        r.lse.data[ladder::offset(s, b, h, Lq, i, 1)] =
            std::log(normalizer) + query_shift[i] + key_shift;
      }
    }
  }
  return r;
}

}  // namespace sparseattn
