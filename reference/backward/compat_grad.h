// The gradients under the other conventions (contract §7.4–§7.6; docs/backward.md,
// "Gradients under the compatibility modes"): of HF BigBird's listing (--compat
// hf-bigbird, a block listed twice counted twice), of Longformer's per-batch globals and
// global projections (--global-mask, --q-global --k-global --v-global), and of a finite
// masked score (--masked-score VALUE). Float64, serial, one query row at a time: the
// definitions `attend --dout` writes and `check --dout` judges against under those flags.
// Each is the chain rule applied to its forward definition (reference/compat.h,
// reference/masked_score.h) and is checked against central finite differences of it
// (tests/reference/compat_grad_test.cpp).
//
// Shapes, as for b1 (reference/backward/backward.h): q [B,H,Lq,D], k [B,H,Lk,D],
// v [B,H,Lk,Dv], dout [B,H,Lq,Dv] (rank 4); dq, dk, dv come back with those shapes.
// scale: nullptr = 1/sqrt(D). Throws InvalidArgument for mismatched shapes ("dout shape"
// for dout), and what the forward definition throws.
#pragma once

#include "reference/backward/backward.h"
#include "reference/compat.h"

namespace sparseattn {

// dq, dk, dv, and under Longformer's global projections dq_global, dk_global, dv_global
// (the shapes of q, k, v; empty without projections).
struct CompatGradientResult {
  Tensor<double> dq, dk, dv;
  Tensor<double> dq_global, dk_global, dv_global;
  Tensor<double> dsinks;  // [H_q] with sinks (contract §2.9, §7.7), else empty
};

// §7.4 — the gradient of hf_listing_oracle. Per query row i (a real query), its softmax
// runs over the listed terms t = (block c, key j in c, j real), a key once per listing:
//   p_t = exp(s_ij − lse_i),  dv_j += p_t do_i,  ds_t = p_t (<do_i, v_j> − Σ_t' p_t' <do_i, v_j'>),
//   dq_i += scale ds_t k_j,   dk_j += scale ds_t q_i,
// so a key listed twice receives two terms. A padded query row contributes nothing.
CompatGradientResult hf_listing_grad(const Tensor<double>& q, const Tensor<double>& k,
                                     const Tensor<double>& v, const Tensor<double>& dout,
                                     const BlockListing& listing,
                                     const Tensor<uint8_t>* key_padding_mask, const double* scale);

// §7.5 — the gradient of longformer_compat with the float64 oracle as its attention. Batch
// element b uses its own pattern (longformer_batch: globals from global_mask row b, key
// padding row b). A global query row (global_row[i]) with projections given is attention
// of q_global[i] over k_global, v_global: its terms go to dq_global[i], dk_global, dv_global,
// and nothing of it reaches dq, dk, dv; every other row's terms go to dq, dk, dv (as b1).
// Without projections this is b1 on each batch element's pattern.
CompatGradientResult longformer_compat_grad(const Tensor<double>& q, const Tensor<double>& k,
                                            const Tensor<double>& v, const Tensor<double>& dout,
                                            const PatternSpec& spec,
                                            const LongformerGlobals& globals,
                                            const double* scale);

// §7.6 — the gradient of masked_score_attention. Every row's softmax runs over every key;
// a masked pair's score is the constant `value`, so it still takes its share of dv
// (dv_j += p_ij do_i) and of the row sum D_i, but gives nothing to dq_i or dk_j. A row with
// no allowed key: p_ij = 1/L_k, dv_j += do_i / L_k, dq_i = 0.
GradientResult masked_score_grad(const Tensor<double>& q, const Tensor<double>& k,
                                 const Tensor<double>& v, const Tensor<double>& dout,
                                 const Pattern& pattern, const double* scale, double value);

}  // namespace sparseattn
