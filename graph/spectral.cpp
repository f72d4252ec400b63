// Serial Eigen: its OpenMP split of a sparse mat-vec costs more in thread wake-ups than the
// product itself at these sizes (measured: half the time of `reach` at seq_len 2^20).
#define EIGEN_DONT_PARALLELIZE
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

// method "" = by size (dense up to kDenseLimit nodes).
SpectralGap gap_of(const Pattern& pattern, std::string method) {
  require(pattern.sizes.seq_len_q == pattern.sizes.seq_len_k, "pattern", "cross-attention",
          "self-attention (seq_len_q == seq_len_k)");
  require(method.empty() || method == "eigen-dense" || method == "spectra-arnoldi", "method",
          method, "eigen-dense or spectra-arnoldi");
  SpectralGap result;
  const SparseRow p = transition_matrix(pattern, result.block_level);
  const int64_t n = p.rows();
  if (method.empty()) method = n <= kDenseLimit ? "eigen-dense" : "spectra-arnoldi";
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
    // The two eigenvalues of largest modulus: λ₁ = 1 and λ₂ (Spectra keeps a complex λ₂'s
    // conjugate with it). tol 1e-9 relative: the gap is printed to 6 digits. A window
    // ring's eigenvalues cluster near 1 and may not separate: then RuntimeError, and the
    // CLI reports the gap as unknown rather than guessing.
    Spectra::SparseGenMatProd<double, Eigen::RowMajor> op(p);
    const Eigen::Index nev = 2, ncv = std::min<Eigen::Index>(n, 40);
    Spectra::GenEigsSolver<Spectra::SparseGenMatProd<double, Eigen::RowMajor>> solver(op, nev, ncv);
    solver.init();
    solver.compute(Spectra::SortRule::LargestMagn, 3000, 1e-9);
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

}  // namespace

SpectralGap spectral_gap_with(const Pattern& pattern, const std::string& method) {
  require(!method.empty(), "method", "\"\"", "eigen-dense or spectra-arnoldi");
  return gap_of(pattern, method);
}

SpectralGap spectral_gap(const Pattern& pattern) { return gap_of(pattern, ""); }

}  // namespace sparseattn::graph
