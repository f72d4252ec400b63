// Attention with a finite masked score (contract §1.6); see masked_score.h.
#include "reference/masked_score.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sparseattn {

AttentionResult masked_score_attention(const Tensor<double>& q, const Tensor<double>& k,
                                       const Tensor<double>& v, const Pattern& pattern,
                                       const double* scale, double value) {
  AttentionResult r;
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  r.o = Tensor<double>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v}, 0.0);
  r.lse = Tensor<double>({s.batch, s.num_heads, s.seq_len_q}, 0.0);
  std::vector<double> sv(static_cast<size_t>(s.seq_len_k));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t bh = b * s.num_heads + h;
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        const double* qi = q.ptr() + (bh * s.seq_len_q + i) * s.head_dim;
        double m = -INFINITY;
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          double x = value;  // masked: the score IS value (masked_fill), not removed
          if (pattern.allowed(b, h, i, j)) {
            const double* kj = k.ptr() + (bh * s.seq_len_k + j) * s.head_dim;
            x = 0.0;
            for (int64_t d = 0; d < s.head_dim; ++d) x += qi[d] * kj[d];
            x *= sc;
          }
          sv[j] = x;
          m = std::max(m, x);
        }
        double z = 0.0;
        double* oi = r.o.ptr() + (bh * s.seq_len_q + i) * s.head_dim_v;
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          const double p = std::exp(sv[j] - m);
          z += p;
          const double* vj = v.ptr() + (bh * s.seq_len_k + j) * s.head_dim_v;
          for (int64_t d = 0; d < s.head_dim_v; ++d) oi[d] += p * vj[d];
        }
        for (int64_t d = 0; d < s.head_dim_v; ++d) oi[d] /= z;
        r.lse.data[bh * s.seq_len_q + i] = m + std::log(z);
      }
    }
  return r;
}

}  // namespace sparseattn
