// Attention rollout with uniform weights (Abnar & Zuidema 2020, "Quantifying Attention
// Flow in Transformers", §3): how evenly information has mixed, not only whether it
// arrived.
//
// Per layer: W[i][j] = mean over heads h of 1/|A_h(i)| for j ∈ A_h(i) (uniform attention
// over each head's allowed keys; heads with an empty row are left out of the mean), and
// Ã = 0.5·W + 0.5·I (their residual term; a row no head attends is e_i). Rollout after L
// layers: R_L = Ã_L · Ã_{L-1} ⋯ Ã_1, row-stochastic, and R_L[i][j] > 0 exactly when j
// reaches i within L layers (support = boolean reachability; a test checks both facts).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "graph/layer_graph.h"

namespace sparseattn::graph {

// R_L as a dense [seq_len, seq_len] matrix, row = query (receiver), column = source.
// O(L · nnz · seq_len) time; throws InvalidArgument("seq_len") above 2048 tokens and
// InvalidArgument("layers") for L < 1.
Eigen::MatrixXd rollout_matrix(const LayerStack& stack, int64_t layers);

// Row `token` of R_L for L = 1 .. num_layers, summarised as its normalized entropy
// H(R_L[token, :]) / log(seq_len) (1: spread evenly over every token; 0: all mass on one).
// O(num_layers² · nnz) time (O(num_layers · nnz) for a uniform stack), O(seq_len) memory;
// token level, seq_len up to kMaxTokenNodes. Throws InvalidArgument("token").
std::vector<double> rollout_evenness(const LayerStack& stack, int64_t token);

}  // namespace sparseattn::graph
