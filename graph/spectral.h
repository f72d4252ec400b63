// Spectral gap of one layer's graph (BigBird §3 argues with expanders).
//
// P is the row-normalized adjacency with self edges: P[i][j] = 1 / |A(i) ∪ {i}| for
// j ∈ A(i) ∪ {i}, where A(i) is the union over heads of the keys query i may attend —
// uniform attention over the pattern plus the residual path, a random walk on the layer
// graph. gap = 1 − |λ₂|, |λ₂| the second-largest eigenvalue modulus of P (λ₁ = 1, P is
// stochastic). Near 0: information spreads slowly (a ring of windows, |λ₂| ≈ 1 − O(w²/n²));
// large: an expander (random blocks, global tokens) mixes in few steps.
#pragma once

#include <cstdint>
#include <string>

#include "pattern/pattern.h"

namespace sparseattn::graph {

struct SpectralGap {
  double gap = 0.0;           // 1 − |λ₂|
  double lambda2_modulus = 0.0;
  bool block_level = false;   // computed on the block graph (exact, see below)
  std::string method;         // "eigen-dense" or "spectra-arnoldi"
};

// Block level: when every tile of the union is full, P is lumpable: its nonzero
// eigenvalues are those of the block matrix Q[a][b] = |b| / Σ_{c ∈ N(a)} |c| over the
// block graph (|b| = tokens in block b), the rest are 0. So the gap is exact there too.
//
// Method: up to kDenseLimit nodes, every eigenvalue with Eigen's dense EigenSolver;
// above, the 3 of largest modulus with Spectra's implicitly restarted Arnoldi
// (GenEigsSolver). Throws InvalidArgument("pattern") for a non-self-attention pattern,
// RuntimeError when Arnoldi does not converge (never a made-up number).
inline constexpr int64_t kDenseLimit = 600;
SpectralGap spectral_gap(const Pattern& pattern);

// The same, forcing the method ("eigen-dense" or "spectra-arnoldi"): for the test that
// checks one against the other.
SpectralGap spectral_gap_with(const Pattern& pattern, const std::string& method);

}  // namespace sparseattn::graph
