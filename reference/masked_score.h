// Attention with a finite masked score (contract §1.6, `--masked-score VALUE`): the
// convention of libraries that mask with masked_fill(-1e9) or a tiled kernel's -1e6
// instead of removing masked keys from the softmax. Float64, serial: the definition that
// `attend --masked-score` writes and `check --masked-score` judges against
// (api/conventions.h, convention_oracle), and whose gradient is
// reference/backward/compat_grad.h's masked_score_grad.
#pragma once

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn {

// Per (batch, head), query i, over EVERY key j (padded keys included):
//   s_ij  = scale · <q_i, k_j>   when the pattern allows (i, j)  (key padding applied)
//         = value                otherwise
//   lse_i = log Σ_j exp(s_ij),   o_i = Σ_j exp(s_ij − lse_i) v_j
// so a row with no allowed key has o_i = mean_j v_j and lse_i = value + ln(seq_len_k).
// q: [B,H,Lq,D], k: [B,H,Lk,D], v: [B,H,Lk,Dv] (rank 4); returns o [B,H,Lq,Dv], lse
// [B,H,Lq] (natural log). scale: nullptr = 1/sqrt(D). `value` is finite (the caller's
// flag check, parse_conventions). Throws InvalidArgument for mismatched shapes.
AttentionResult masked_score_attention(const Tensor<double>& q, const Tensor<double>& k,
                                       const Tensor<double>& v, const Pattern& pattern,
                                       const double* scale, double value);

}  // namespace sparseattn
