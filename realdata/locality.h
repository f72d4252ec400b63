// Locality analysis of dense attention: how much of a head's softmax mass a sparse
// pattern (or a plain sliding window) would keep — the question of Pande et al., "On the
// Importance of Local Information in Transformer Based Models" (2020), asked of the
// patterns of this project.
//
// Definitions (docs/real-data.md restates them). For one head, with dense attention
// P_ij = softmax_j(scale · <q_i, k_j>) over ALL keys j (the model ran dense), a set
// S(i) of keys per query, and the rows R that count (every query row):
//   mass       M(S)  = (1/|R|) Σ_i Σ_{j ∈ S(i)} P_ij          mean kept softmax mass
//   uniform    U(S)  = (1/|R|) Σ_i |S(i)| / seq_len_k          the same for P_ij = 1/seq_len_k
//   bias ratio B(S)  = M(S) / U(S)                             1 = no preference for S
// S is the pattern's allowed set A(i), or the window W_w(i) = { j : |j − p_i| <= w } of
// one-sided width w (p_i = i + seq_len_k − seq_len_q, contract §3). B > 1 means the head puts
// more mass on S than its size alone explains: B(W_w) is the locality bias ratio.
// Also reported: the mean attention distance D = (1/|R|) Σ_i Σ_j P_ij |j − p_i| (tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::realdata {

struct WindowMass {
  int64_t window;  // one-sided width w (tokens)
  double mass;     // M(W_w)
  double uniform;  // U(W_w)
  double bias;     // B(W_w)
};

struct HeadLocality {
  int64_t batch = 0;
  int64_t head = 0;
  double pattern_mass = 0.0;     // M(A)
  double pattern_uniform = 0.0;  // U(A) = the pattern's mean row density
  double pattern_bias = 0.0;     // B(A)
  double pattern_mass_min_row = 0.0;  // min_i Σ_{j ∈ A(i)} P_ij (the worst-served query)
  double mean_distance = 0.0;    // D, in tokens
  std::vector<WindowMass> windows;
};

// The default window widths: powers of two 1 .. 256 (one-sided).
std::vector<int64_t> default_windows();

// q: [batch, num_heads, seq_len_q, head_dim], k: [batch, num_heads, seq_len_k, head_dim]
// (rank 2/3 accepted: leading 1s). pattern: materialized for (num_heads, seq_len_q,
// seq_len_k); its key padding, if any, is ignored (the dense softmax runs over all keys).
// windows: one-sided widths >= 0. scale: nullptr = 1/sqrt(head_dim).
// Returns one HeadLocality per (batch, head), batch-major. float64 throughout; each
// row's softmax is stabilized by its maximum. Cost O(batch·heads·seq_len_q·seq_len_k·head_dim);
// heads run in parallel (OpenMP), each head's arithmetic is serial, so results do not
// depend on the thread count.
// Throws InvalidArgument: "q"/"k" for rank or dimension mismatches, "pattern" when built
// for other sizes, "windows" for a negative width, "scale" when not finite.
std::vector<HeadLocality> analyze_locality(const Tensor<double>& q, const Tensor<double>& k,
                                           const Pattern& pattern,
                                           const std::vector<int64_t>& windows,
                                           const double* scale);

// The JSON report of `sparseattn analyze`: {"pattern": describe(spec), "definitions": ...,
// "heads": [{batch, head, pattern_mass, ..., windows: [{window, mass, uniform, bias}]}],
// "summary": {min/median/max of pattern_mass over heads}}, indented 2.
std::string locality_json(const std::vector<HeadLocality>& heads, const Pattern& pattern);

}  // namespace sparseattn::realdata
