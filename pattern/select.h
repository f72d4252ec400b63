// Selection (contract §3.18): deterministic float64 functions from scores to the index
// tables of `selected` (§3.16) and `selected-blocks` (§3.17). Every tie goes to the lower
// index; every row lists its picks in rank order (forced entries first, ascending) and
// pads with -1. Errors are InvalidArgument naming the argument by its Python keyword
// ("top_k", "scores shape", "index_q[0,1,2,3]"); the CLI spells them as flags.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sparseattn {

// scores [B, H, L_q, N] -> [B, H, L_q, top_k]: the top_k highest-scoring candidates of
// each row; candidates j in [0, N), j <= i + N - L_q under causal; a score of -inf is no
// candidate; NaN and +inf are refused. top_k >= 1.
Tensor<int64_t> select_topk(const Tensor<double>& scores, int64_t top_k, bool causal);

// DeepSeek-V3.2-Exp's lightning indexer, Sec. 2.1, eq. 1: I[t, s] = Σ_h w[t, h]·ReLU(q^I[t, h]·k^I[s])
// from index_q [B, L_q, H_I, d_I], index_k [B, L_k, d_I], weights [B, L_q, H_I]; causal
// (s <= t + L_k - L_q); top_k. Returns [B, 1, L_q, top_k] (one list for every head).
Tensor<int64_t> select_dsa(const Tensor<double>& index_q, const Tensor<double>& index_k,
                           const Tensor<double>& weights, int64_t top_k);
// The indexer scores alone, [B, 1, L_q, L_k], -inf where causal excludes a key.
Tensor<double> dsa_index_scores(const Tensor<double>& index_q, const Tensor<double>& index_k,
                                const Tensor<double>& weights);

// MoBA (Lu et al. 2025, Sec. 2.2): q [B, H_q, L_q, d], k [B, H_kv, L_k, d] (H_kv divides H_q;
// head h reads kv head h / g), chunks of chunk_size keys from key 0. Query i at p = i + L_k
// - L_q selects its own chunk p / C (first, counted in top_k) and the top_k - 1 past chunks
// with the highest gate q_i · mean(K_chunk); none when p < 0. Returns [B, H_q, L_q, top_k]
// key-block indices for selected-blocks with block_size_q 1, block_size_k chunk_size, causal.
Tensor<int64_t> select_moba(const Tensor<double>& q, const Tensor<double>& k, int64_t chunk_size,
                            int64_t top_k);

// NSA's token selection (Yuan et al. 2025, Sec. 3.3.2): scores [B, H, L_q, n_k] block
// importance for key blocks of block_size_k tokens, n_k = ceil(seq_len_k / block_size_k).
// Query i at p = i + seq_len_k - L_q: causal blocks c <= p / b_k; forced: c < num_initial and
// p / b_k - num_local < c <= p / b_k (each once); the rest of the num_selected slots by
// score. Returns [B, H, L_q, num_selected]. num_selected >= num_initial + num_local, >= 1.
Tensor<int64_t> select_nsa(const Tensor<double>& scores, int64_t block_size_k, int64_t num_selected,
                           int64_t num_initial, int64_t num_local, int64_t seq_len_k);

}  // namespace sparseattn
