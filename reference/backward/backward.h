// The backward pass of the reference ladder (contract §7; formulas in docs/backward.md).
// Serial, float64, no intrinsics, no OpenMP. Read in order: b1 -> b3
// (files reference/backward/b*_*.cpp). Beside b1, the gradients under the other
// conventions (b1c: the compatibility modes, b1m: a finite masked score) are declared in
// reference/backward/compat_grad.h (contract §7.4-§7.6).
//
// Common contract of every step:
//   q: [batch, num_heads, seq_len_q, head_dim]     row-major (rank 2/3: leading 1s)
//   k: [batch, num_heads, seq_len_k, head_dim]
//   v: [batch, num_heads, seq_len_k, head_dim_v]
//   dout: [batch, num_heads, seq_len_q, head_dim_v]  gradient of the loss w.r.t. o
//   returns dq, dk, dv with the shapes of q, k, v (as rank 4).
//   scale: nullptr means 1/sqrt(head_dim).
//   A fully masked row (lse = -inf) contributes nothing and gets dq = 0; a key no query
//   attends (padding included) gets dk = dv = 0 — exact zeros, never NaN.
// Throws InvalidArgument for shape mismatches (dout included, named "dout"), a pattern
// built for other sizes, or a non-finite scale.
#pragma once

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn {

struct GradientResult {
  Tensor<double> dq;  // [batch, num_heads, seq_len_q, head_dim]
  Tensor<double> dk;  // [batch, num_kv_heads, seq_len_k, head_dim]
  Tensor<double> dv;  // [batch, num_kv_heads, seq_len_k, head_dim_v]
  Tensor<double> dsinks;  // [num_heads] with sinks (contract §2.9), else empty
};

// b1 — THE GRADIENT ORACLE: the derivative of a1_dense_masked written from its definition.
// Per row, the full masked probability row P, dP = dO Vᵀ, and the softmax Jacobian
// dS = P ∘ (dP − Σ_j P dP). Any pattern.
GradientResult b1_dense_masked_grad(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Tensor<double>& dout,
                                    const Pattern& pattern, const double* scale);

// b1 for the attention of current models (contract §7.7): the derivative of
// a1_dense_masked(q, k, v, pattern, scale, mods). k and v may have H_kv heads dividing q's
// (contract §2.7): dk and dv have H_kv heads, each the sum over its g query heads. The
// softcap enters by the chain rule, ds_raw = ds · (1 − tanh²(s/c)); ALiBi's bias is a
// constant; with sinks the result carries dsinks [H_q],
// dσ_h = −Σ_{b,i} exp(σ_h − lse_{b,h,i}) · <dO_{b,h,i}, o_{b,h,i}>.
GradientResult b1_dense_masked_grad(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Tensor<double>& dout,
                                    const Pattern& pattern, const double* scale,
                                    const ScoreMods& mods);

// b2 — sparse rows: b1 visiting only each row's allowed keys (row_keys), O(nnz · dims).
// Any pattern.
GradientResult b2_sparse_rows_grad(const Tensor<double>& q, const Tensor<double>& k,
                                   const Tensor<double>& v, const Tensor<double>& dout,
                                   const Pattern& pattern, const double* scale);

// b3 — tiled FlashAttention-2 backward (Dao 2023, Alg. 2) over the canonical layout:
// takes the forward pass's saved o [B,H,Lq,Dv] and lse [B,H,Lq] (e.g. from a5), recomputes
// P = exp(S − lse) tile by tile, D = rowsum(dO ∘ O); outer loop over key tiles. Any pattern.
// Throws InvalidArgument("o"/"lse") when their shapes do not match.
GradientResult b3_flash_tiled_grad(const Tensor<double>& q, const Tensor<double>& k,
                                   const Tensor<double>& v, const Tensor<double>& o,
                                   const Tensor<double>& lse, const Tensor<double>& dout,
                                   const Pattern& pattern, const double* scale);

// Shared check: dout must have shape [batch, num_heads, seq_len_q, head_dim_v] (leading 1s
// may be omitted, as for q). Throws InvalidArgument("dout", shape, expected shape).
void validate_dout(const Shape& dout, const AttentionShape& s);

}  // namespace sparseattn
