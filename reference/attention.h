// The CPU reference ladder (contract §2). Serial, float64, no intrinsics, no OpenMP: each
// step is written to be read. Read them in order: a0 -> a6 (files reference/a*_*.cpp; a3g
// follows a3).
//
// Common contract of every step:
//   q: [batch, num_heads, seq_len_q, head_dim]    row-major (rank 2/3 accepted: leading 1s)
//   k: [batch, num_heads, seq_len_k, head_dim]
//   v: [batch, num_heads, seq_len_k, head_dim_v]
//   returns o: [batch, num_heads, seq_len_q, head_dim_v], lse: [batch, num_heads, seq_len_q]
//   lse is the natural-log logsumexp of the scaled allowed scores; a row with no allowed
//   key has o = 0 and lse = -inf (contract §2), never NaN.
//   scale: nullptr means 1/sqrt(head_dim).
// Throws InvalidArgument for shape mismatches, a pattern built for other sizes, a
// non-finite scale, or a pattern kind the step does not serve.
#pragma once

#include "core/score_mods.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn {

struct AttentionResult {
  Tensor<double> o;
  Tensor<double> lse;
};

// a0 — the definition: softmax(scale · q kᵀ) v with the full score matrix materialized,
// no mask (Vaswani et al. 2017, eq. 1). Only for dense non-causal patterns.
AttentionResult a0_dense(const Tensor<double>& q, const Tensor<double>& k,
                         const Tensor<double>& v, const Pattern& pattern, const double* scale);

// a1 — THE ORACLE: a0 with the pattern's mask applied as -inf scores (contract §4). Any pattern.
// k and v may have H_kv heads dividing q's H_q (grouped-query attention, contract §2.7).
AttentionResult a1_dense_masked(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale);
// The oracle of the attention of current models: `mods` adds the softcap and ALiBi of the
// score pipeline (contract §2.8) and sinks (§2.9): lse includes the sink, a real row with no
// allowed key has lse = sink. Throws FieldError (softcap, alibi_slopes, sinks) for bad mods.
AttentionResult a1_dense_masked(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale, const ScoreMods& mods);

// a2 — sparse rows: loops only over each row's allowed keys (row_keys), O(nnz). Any pattern.
AttentionResult a2_sparse_rows(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Pattern& pattern,
                               const double* scale);

// a3 — band: sliding/dilated window keys computed from band_steps(), no key list.
// Only pattern kind `window`.
AttentionResult a3_window_band(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Pattern& pattern,
                               const double* scale);

// a3g — Longformer's global tokens: a3's band plus the global set G (Beltagy et al. 2020,
// §3.1): a global query attends every key; every other query attends its band and every
// global key, each key counted once. Pattern kinds `window` (G empty) and `longformer`.
AttentionResult a3g_longformer_global(const Tensor<double>& q, const Tensor<double>& k,
                                      const Tensor<double>& v, const Pattern& pattern,
                                      const double* scale);

// a4 — BigBird block by block: per query block, gather the key/value blocks its block
// table lists into contiguous buffers, then one dense block attention (Zaheer et al.
// 2020, App. D, Fig. 5). Pattern kinds `bigbird` and `bigbird_etc` (any kind whose layout
// is block-sparse works: partial tiles are masked element-wise).
AttentionResult a4_bigbird_blocks(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Pattern& pattern,
                                  const double* scale);

// a5 — tiled online softmax (FlashAttention, Dao et al. 2022, Alg. 1): visits the
// layout's tiles, keeps running max m and sum l per row, never holds a row of scores.
// Any pattern. The bridge to the optimized CPU and CUDA kernels.
AttentionResult a5_flash_tiled(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Pattern& pattern,
                               const double* scale);

// a6 — a5 with the attention of current models (contract §2.7–§2.9): k and v may have H_kv
// heads dividing H_q (query head h reads kv head h / g); each allowed score of a tile goes
// through the pipeline (scale, softcap, ALiBi, then the pattern's -inf); a sink is every
// real row's initial running max and sum (m = σ, l = 1), so a real row with no allowed key
// has o = 0, lse = σ. Any pattern. Throws FieldError (softcap, alibi_slopes, sinks) for bad
// mods. The bridge to the optimized kernels' modern path.
AttentionResult a6_flash_modern(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale, const ScoreMods& mods = ScoreMods{});

}  // namespace sparseattn
