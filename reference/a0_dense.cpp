// a0 — the definition. Step 0 of the ladder: nothing has changed yet.
//
//   Attention(Q, K, V) = softmax(scale · Q Kᵀ) V          (Vaswani et al. 2017, §3.2.1, eq. 1)
//
// The full score matrix S [seq_len_q, seq_len_k] of one (batch, head) is materialized,
// then softmaxed row by row (stably: subtract the row maximum, contract §2), then multiplied
// by V. O(seq_len_q · seq_len_k) memory and time, exactly as the formula reads.
//
// Serves the dense, non-causal pattern only: there is no mask here, that is a1's step.
// Key padding (contract §2) is not a mask of the pattern but a statement that some tokens do
// not exist, so the definition honours it the way the formula does: padded keys are not
// columns of S, and a padded query row has no keys (o = 0, lse = -inf).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.h"
#include "reference/ladder_common.h"

namespace sparseattn {

AttentionResult a0_dense(const Tensor<double>& q, const Tensor<double>& k,
                         const Tensor<double>& v, const Pattern& pattern, const double* scale) {
  ladder::require_kind(pattern.spec.kind == PatternKind::dense && !pattern.spec.causal, pattern,
                       "a0_dense", "dense without causal");
  const ladder::Call call = ladder::prepare(q, k, v, pattern, scale);
  const AttentionShape& s = call.s;
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const double kNegInf = -std::numeric_limits<double>::infinity();

  AttentionResult r = ladder::empty_result(s);
  std::vector<double> S(static_cast<size_t>(Lq * Lk));  // scores, then probabilities P

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.num_heads; ++h) {
      // 1. S = scale · Q Kᵀ; a padded key is not a column (its score stays -inf).
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qi = q.ptr() + ladder::offset(s, b, h, Lq, i, D);
        for (int64_t j = 0; j < Lk; ++j) {
          const bool exists = pattern.query_valid(b, i) && pattern.key_valid(b, j);
          S[i * Lk + j] =
              exists ? call.scale * ladder::dot(qi, k.ptr() + ladder::offset(s, b, h, Lk, j, D), D)
                     : kNegInf;
        }
      }
      // 2. P = softmax(S) row by row, stably; lse = m + log(sum exp(S - m)).
      for (int64_t i = 0; i < Lq; ++i) {
        double* row = &S[i * Lk];
        double m = kNegInf;
        for (int64_t j = 0; j < Lk; ++j) m = std::max(m, row[j]);
        if (m == kNegInf) {  // no key exists for this row: o = 0, lse = -inf already
          for (int64_t j = 0; j < Lk; ++j) row[j] = 0.0;
          continue;
        }
        double l = 0.0;
        for (int64_t j = 0; j < Lk; ++j) l += std::exp(row[j] - m);
        for (int64_t j = 0; j < Lk; ++j) row[j] = std::exp(row[j] - m) / l;
        r.lse.data[ladder::offset(s, b, h, Lq, i, 1)] = m + std::log(l);
      }
      // 3. O = P V.
      for (int64_t i = 0; i < Lq; ++i) {
        double* oi = r.o.ptr() + ladder::offset(s, b, h, Lq, i, Dv);
        for (int64_t j = 0; j < Lk; ++j) {
          const double p = S[i * Lk + j];
          const double* vj = v.ptr() + ladder::offset(s, b, h, Lk, j, Dv);
          for (int64_t e = 0; e < Dv; ++e) oi[e] += p * vj[e];
        }
      }
    }
  }
  return r;
}

}  // namespace sparseattn
