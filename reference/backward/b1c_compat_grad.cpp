// b1c — the gradients of the two compatibility modes (contract §3.12, §7.4–§7.5), beside
// the gradient oracle b1 whose chain rule they reuse.
//
// Contract: the derivative of the mode's float64 forward definition, hf_listing_oracle and
// longformer_compat (reference/compat.h) with a1_dense_masked as its attention; float64,
// serial, no intrinsics; checked against central finite differences of that forward
// (|fd − grad| ≤ 1e-6 · max |grad| per tensor, tests/reference/compat_grad_test.cpp) and
// judged at kTolFloat64 (1e-12 / 1e-12) when it judges others (`check --dout`). Patterns:
// bigbird with HF's random table (hf-bigbird, n a multiple of b, n_b ≥ 5); longformer
// (per-batch global masks, global projections). Key padding as in the forward; seq_len_q ≠
// seq_len_k for Longformer as in §3.1.
//
// What changed since b1: the softmax row no longer comes from Pattern::allowed alone.
// hf-bigbird: a row's summands are HF's listed blocks, a block listed twice giving its
// keys twice (ladder::softmax_row_grad takes a list of terms, repeats kept). Longformer:
// each batch element has its own pattern (longformer_batch), and a global query row under
// the projections reads q_global, k_global, v_global, so its gradient lands in dq_global,
// dk_global, dv_global instead — the q row at a global position gets dq = 0 exactly.
//
// Measured: docs/backward.md, "Finite differences under the other conventions" (the
// largest |fd − grad| / max |grad| of the test cases).
#include <vector>

#include "reference/backward/compat_grad.h"
#include "reference/backward/grad_common.h"

namespace sparseattn {

CompatGradientResult hf_listing_grad(const Tensor<double>& q, const Tensor<double>& k,
                                     const Tensor<double>& v, const Tensor<double>& dout,
                                     const BlockListing& listing,
                                     const Tensor<uint8_t>* key_padding_mask, const double* scale) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  validate_listing_inputs(s, listing, key_padding_mask);
  const int64_t n = listing.num_blocks * listing.block_size;
  validate_dout(dout.shape, s);
  const double sc = resolve_scale(scale, s.head_dim);
  const int64_t bs = listing.block_size, D = s.head_dim, Dv = s.head_dim_v;
  const GradientResult z = ladder::zero_gradients(s);
  CompatGradientResult g{z.dq, z.dk, z.dv, {}, {}, {}};
  auto real = [&](int64_t b, int64_t j) {
    return !key_padding_mask || key_padding_mask->data[static_cast<size_t>(b * n + j)] != 0;
  };
  std::vector<ladder::SoftmaxTerm> terms;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t kv = (b * s.num_heads + h) * n;  // this (batch, head)'s row 0
      for (int64_t i = 0; i < n; ++i) {
        if (!real(b, i)) continue;  // padded query: o = 0 is constant (contract §2.4)
        // HF's listed keys, a key once per listing of its block; padded keys dropped.
        terms.clear();
        for (int64_t c : listing.lists[static_cast<size_t>(h)][static_cast<size_t>(i / bs)])
          for (int64_t j = c * bs; j < (c + 1) * bs; ++j)
            if (real(b, j)) terms.push_back({j, true});
        ladder::softmax_row_grad(terms, 0.0, sc, q.ptr() + (kv + i) * D, k.ptr() + kv * D,
                                 v.ptr() + kv * Dv, dout.ptr() + (kv + i) * Dv, D, Dv,
                                 g.dq.ptr() + (kv + i) * D, g.dk.ptr() + kv * D,
                                 g.dv.ptr() + kv * Dv);
      }
    }
  return g;
}

CompatGradientResult longformer_compat_grad(const Tensor<double>& q, const Tensor<double>& k,
                                            const Tensor<double>& v, const Tensor<double>& dout,
                                            const PatternSpec& spec,
                                            const LongformerGlobals& globals,
                                            const double* scale) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  const Shape q4 = as_rank4(q.shape, "q"), k4 = as_rank4(k.shape, "k"), v4 = as_rank4(v.shape, "v");
  validate_longformer_globals(s, q4, k4, v4, spec, globals);
  validate_dout(dout.shape, s);
  const double sc = resolve_scale(scale, s.head_dim);
  const bool proj = globals.q_global != nullptr;
  const int64_t H = s.num_heads, Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim,
                Dv = s.head_dim_v;
  const GradientResult z = ladder::zero_gradients(s);
  CompatGradientResult g{z.dq, z.dk, z.dv, {}, {}, {}};
  if (proj) g.dq_global = z.dq, g.dk_global = z.dk, g.dv_global = z.dv;
  std::vector<ladder::SoftmaxTerm> terms;
  for (int64_t b = 0; b < s.batch; ++b) {
    const LongformerBatch lb = longformer_batch(spec, globals, b, s);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t qrow0 = (b * H + h) * Lq, krow0 = (b * H + h) * Lk;
      for (int64_t i = 0; i < Lq; ++i) {
        terms.clear();
        for (int64_t j = 0; j < Lk; ++j)
          if (lb.pattern.allowed(0, h, i, j)) terms.push_back({j, true});
        // A global row under the projections reads (and so moves) only the global tensors.
        const bool global = proj && lb.global_row[static_cast<size_t>(i)];
        const Tensor<double>& qx = global ? *globals.q_global : q;
        const Tensor<double>& kx = global ? *globals.k_global : k;
        const Tensor<double>& vx = global ? *globals.v_global : v;
        Tensor<double>& dqx = global ? g.dq_global : g.dq;
        Tensor<double>& dkx = global ? g.dk_global : g.dk;
        Tensor<double>& dvx = global ? g.dv_global : g.dv;
        ladder::softmax_row_grad(terms, 0.0, sc, qx.ptr() + (qrow0 + i) * D, kx.ptr() + krow0 * D,
                                 vx.ptr() + krow0 * Dv, dout.ptr() + (qrow0 + i) * Dv, D, Dv,
                                 dqx.ptr() + (qrow0 + i) * D, dkx.ptr() + krow0 * D,
                                 dvx.ptr() + krow0 * Dv);
      }
    }
  }
  return g;
}

}  // namespace sparseattn
