#include "graph/spectral.h"

#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <Spectra/GenEigsSolver.h>
#include <Spectra/MatOp/SparseGenMatProd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "core/error.h"
#include "graph/layer_graph.h"

namespace sparseattn::graph {

namespace {

using SparseRow = Eigen::SparseMatrix<double, Eigen::RowMajor>;

// P (or Q at block level) as a sparse matrix, from the layer's tile union.
SparseRow transition_matrix(const Pattern& pattern, bool& block_level) {
  const HeadLayout u = layer_union(pattern);
  block_level = block_level_exact({u});
  std::vector<Eigen::Triplet<double>> entries;
  std::vector<int32_t> keys;
  if (block_level) {
    const int64_t nb = u.num_q_tiles(), n = u.seq_len_q, b = u.tile;
    auto size = [&](int64_t block) { return static_cast<double>(std::min(b, n - block * b)); };
    for (int64_t a = 0; a < nb; ++a) {
      double total = 0.0;
      for (int64_t e = u.row_ptr[a]; e < u.row_ptr[a + 1]; ++e) total += size(u.col[e]);
      for (int64_t e = u.row_ptr[a]; e < u.row_ptr[a + 1]; ++e)
        entries.emplace_back(a, u.col[e], size(u.col[e]) / total);
    }
    SparseRow q(nb, nb);
    q.setFromTriplets(entries.begin(), entries.end());
    return q;
  }
  const int64_t n = u.seq_len_q;
  for (int64_t i = 0; i < n; ++i) {
    row_keys_of(u, i, keys);  // includes i: layer_union adds the self edge
    for (int32_t j : keys) entries.emplace_back(i, j, 1.0 / static_cast<double>(keys.size()));
  }
  SparseRow p(n, n);
  p.setFromTriplets(entries.begin(), entries.end());
  return p;
}

// Second-largest modulus among eigenvalues; the largest is 1 (P is stochastic).
double second_modulus(std::vector<double> moduli) {
  std::sort(moduli.begin(), moduli.end(), std::greater<double>());
  return moduli.size() < 2 ? 0.0 : moduli[1];
}

}  // namespace

SpectralGap spectral_gap_with(const Pattern& pattern, const std::string& method) {
  require(pattern.sizes.seq_len_q == pattern.sizes.seq_len_k, "pattern", "cross-attention",
          "self-attention (seq_len_q == seq_len_k)");
  require(method == "eigen-dense" || method == "spectra-arnoldi", "method", method,
          "eigen-dense or spectra-arnoldi");
  SpectralGap result;
  const SparseRow p = transition_matrix(pattern, result.block_level);
  const int64_t n = p.rows();
  result.method = method;
  std::vector<double> moduli;
  if (method == "eigen-dense" || n <= 3) {
    result.method = "eigen-dense";
    Eigen::EigenSolver<Eigen::MatrixXd> solver(Eigen::MatrixXd(p), false);
    if (solver.info() != Eigen::Success)
      throw RuntimeError("spectral gap: Eigen's EigenSolver did not converge");
    for (Eigen::Index k = 0; k < solver.eigenvalues().size(); ++k)
      moduli.push_back(std::abs(solver.eigenvalues()[k]));
  } else {
    // Three eigenvalues of largest modulus: λ₁ = 1 and, if λ₂ is complex, its conjugate.
    // A larger Krylov space (ncv) than Spectra's minimum: a window ring's eigenvalues
    // cluster near 1 and separate slowly.
    Spectra::SparseGenMatProd<double, Eigen::RowMajor> op(p);
    const Eigen::Index nev = 3, ncv = std::min<Eigen::Index>(n, 60);
    Spectra::GenEigsSolver<Spectra::SparseGenMatProd<double, Eigen::RowMajor>> solver(op, nev, ncv);
    solver.init();
    solver.compute(Spectra::SortRule::LargestMagn, 5000, 1e-10);
    if (solver.info() != Spectra::CompInfo::Successful)
      throw RuntimeError("spectral gap: Spectra's Arnoldi iteration did not converge (n = " +
                         std::to_string(n) + ")");
    const Eigen::VectorXcd values = solver.eigenvalues();
    for (Eigen::Index k = 0; k < values.size(); ++k) moduli.push_back(std::abs(values[k]));
  }
  result.lambda2_modulus = std::min(1.0, second_modulus(moduli));
  result.gap = 1.0 - result.lambda2_modulus;
  return result;
}

SpectralGap spectral_gap(const Pattern& pattern) {
  // Decide by the size of the matrix actually built (blocks or tokens).
  const HeadLayout& h = pattern.head(0);
  const int64_t nodes_if_block = h.num_q_tiles();
  const int64_t n = pattern.sizes.seq_len_q;
  const bool small = n <= kDenseLimit || (h.tile > 1 && nodes_if_block <= kDenseLimit &&
                                          block_level_exact({layer_union(pattern)}));
  return spectral_gap_with(pattern, small ? "eigen-dense" : "spectra-arnoldi");
}

}  // namespace sparseattn::graph
