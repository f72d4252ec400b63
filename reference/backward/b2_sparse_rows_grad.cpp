// b2 — sparse rows, backward. Changed since b1: each query row visits only its allowed
// keys A(i), read from the pattern's per-row key lists (row_keys(), derived from the
// HeadLayout, after key padding), instead of asking Pattern::allowed for all seq_len_k keys.
//
// Why: b1 costs O(seq_len_q · seq_len_k) whatever the pattern; this costs O(nnz · (head_dim +
// head_dim_v)), the work the pattern asks for — the same step as a1 -> a2 in the forward
// ladder. The formulas are b1's, per row, over the listed keys only:
//   p_j = exp(s_j − lse_i),  dp_j = <do_i, v_j>,  ds_j = p_j (dp_j − Σ_t p_t dp_t),
//   dv_j += p_j do_i,  dq_i = scale Σ_j ds_j k_j,  dk_j += scale ds_j q_i.
// Rows are visited in b1's order and keys ascending; only rounding differs from b1
// (measured on the CPU grid: 5e-5 of kTolFloat64's budget, tests/cpu/backward_kernels_test).
// Any pattern.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/backward/grad_common.h"

namespace sparseattn {

GradientResult b2_sparse_rows_grad(const Tensor<double>& q, const Tensor<double>& k,
                                   const Tensor<double>& v, const Tensor<double>& dout,
                                   const Pattern& pattern, const double* scale) {
  const ladder::Call call = ladder::prepare_grad(q, k, v, dout, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;

  GradientResult g = ladder::zero_gradients(s);
  std::vector<int64_t> keys;  // A(i) after key padding, ascending
  std::vector<double> p, dp;  // p_j and dp_j for j in keys, same order

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const RowKeys rows = row_keys(pattern.head(h));
      for (int64_t i = 0; i < Lq; ++i) {
        if (!pattern.query_valid(b, i)) continue;  // padded query: fully masked row
        keys.clear();
        for (int64_t e = rows.row_ptr[i]; e < rows.row_ptr[i + 1]; ++e)
          if (pattern.key_valid(b, rows.col[e])) keys.push_back(rows.col[e]);
        if (keys.empty()) continue;  // A(i) empty: no gradient flows through row i

        const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
        const double* doi = dout.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        // 1. Scores of the allowed keys, their maximum, the softmax over them.
        p.assign(keys.size(), 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (size_t t = 0; t < keys.size(); ++t) {
          p[t] = call.scale * ladder::dot(qi, k.ptr() + ladder::offset(s, b, h, Lk, keys[t], D), D);
          m = std::max(m, p[t]);
        }
        double l = 0.0;
        for (double x : p) l += std::exp(x - m);
        for (double& x : p) x = std::exp(x - m) / l;
        // 2. dP over the listed keys and the Jacobian's row sum.
        dp.assign(keys.size(), 0.0);
        double row_sum = 0.0;
        for (size_t t = 0; t < keys.size(); ++t) {
          if (p[t] == 0.0) continue;
          dp[t] = ladder::dot(doi, v.ptr() + ladder::offset(s, b, h, Lk, keys[t], Dv), Dv);
          row_sum += p[t] * dp[t];
        }
        // 3. dV, dS, dQ, dK.
        double* dqi = g.dq.ptr() + ladder::offset(s, b, h, Lq, i, D);
        for (size_t t = 0; t < keys.size(); ++t) {
          if (p[t] == 0.0) continue;
          const int64_t j = keys[t];
          ladder::axpy(p[t], doi, g.dv.ptr() + ladder::offset(s, b, h, Lk, j, Dv), Dv);
          const double ds = p[t] * (dp[t] - row_sum);
          ladder::axpy(call.scale * ds, k.ptr() + ladder::offset(s, b, h, Lk, j, D), dqi, D);
          ladder::axpy(call.scale * ds, qi, g.dk.ptr() + ladder::offset(s, b, h, Lk, j, D), D);
        }
      }
    }
  }
  return g;
}

}  // namespace sparseattn
