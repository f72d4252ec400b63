// Nyströmformer — softmax attention approximated through landmarks (Xiong et al. 2021,
// "Nyströmformer: A Nyström-Based Algorithm for Approximating Self-Attention", §3).
//
// NOT exact: its registry entry says exact = false, and its error against the oracle
// a1_dense_masked is a measurement (docs/approximations.md), not a pass/fail tolerance.
// Serial float64, like every reference step.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn {

enum class PinvMethod {
  iterative,  // the paper's: Razavi et al. 2014 iteration, §3 eq. (14), as its code runs it
  exact,      // Eigen's complete orthogonal decomposition: the check of the iteration
};

struct NystromOptions {
  int64_t num_landmarks = 64;  // c, 1 <= c <= min(seq_len_q, seq_len_k)
  PinvMethod pinv = PinvMethod::iterative;
  int64_t pinv_iterations = 6;  // the paper's value; only for PinvMethod::iterative
};

// Landmarks by segment means (paper §3, "we select landmarks … as segment-means").
// x: [n, d] -> [c, d]; landmark l is the mean of rows [floor(l·n/c), floor((l+1)·n/c)).
// The paper (and its code) reshapes to [c, n/c, d] and so needs c | n; here n not a
// multiple of c gives segments of floor(n/c) or ceil(n/c) rows, spread evenly — with
// c | n this is exactly the paper's split, and with c = n each landmark is one row.
// Throws InvalidArgument("num_landmarks") unless 1 <= c <= n.
Tensor<double> segment_means(const Tensor<double>& x, int64_t num_landmarks);

// Moore–Penrose pseudo-inverse A⁺ of a square A [c, c] by the paper's iteration (§3,
// eq. (14), from Razavi et al. 2014):
//   Z₀ = Aᵀ / (‖A‖₁ ‖A‖∞),   Z_{j+1} = ¼ Z_j (13I − A Z_j (15I − A Z_j (7I − A Z_j)))
// (‖A‖₁ the largest column sum, ‖A‖∞ the largest row sum of |A|; for a softmax matrix
// ‖A‖∞ = 1 and this is the code's "original" initialization). Converges to A⁺ for this
// Z₀ (Razavi et al. 2014); 6 iterations is what the paper runs, so it is NOT exact.
// Throws InvalidArgument("A") unless square and non-empty, ("pinv_iterations") when < 0.
Tensor<double> nystrom_iterative_pinv(const Tensor<double>& A, int64_t iterations);

// A⁺ exactly (to rounding), by Eigen's CompleteOrthogonalDecomposition. [c, c] -> [c, c].
Tensor<double> exact_pinv(const Tensor<double>& A);

// Nyströmformer attention, per (batch, head), with s = scale:
//   Q̃ = segment_means(q, c), K̃ = segment_means(k, c)               [c, head_dim]
//   F = softmax(s Q K̃ᵀ) [Lq, c],  A = softmax(s Q̃ K̃ᵀ) [c, c],  B = softmax(s Q̃ Kᵀ) [c, Lk]
//   o = (F A⁺)(B V)                                                    (paper eq. (15))
// O(seq_len · c · head_dim + c³) per head. The method has no normalizer of its own; lse
// is the same Nyström construction applied to the unnormalized kernel exp(s Q Kᵀ):
//   Σ_j [exp(sQK̃ᵀ) exp(sQ̃K̃ᵀ)⁺ exp(sQ̃Kᵀ)]_ij = exp(lseF_i) · (F A⁺ w)_i,
//   w_l = exp(lseB_l − lseA_l)
// (lseF/A/B the row log-sum-exps of the three score matrices; uses (diag(a)A)⁺ =
// A⁺diag(1/a), true for invertible A). With c = seq_len and the exact A⁺ both o and lse
// equal the oracle's (to rounding).
// Where (F A⁺ w)_i is not positive — the approximation broke down for that row, which
// happens on real heads (docs/approximations.md: up to 291 of 4096 rows of layer 0 with
// the paper's A⁺) and often with the exact A⁺ — there is no estimate to report: lse_i is NaN (the one place this project writes a NaN:
// "undefined", not "masked", which would be -inf) and the row is counted in
// *undefined_lse_rows when that pointer is given. o is defined for every row.
// Throws InvalidArgument("pattern (for nystrom)") unless dense, not causal and without
// key padding; ("num_landmarks") unless 1 <= c <= min(seq_len_q, seq_len_k);
// ("pinv_iterations") when < 0; shape/scale errors as every reference step.
AttentionResult nystrom_attention(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Pattern& pattern,
                                  const double* scale, const NystromOptions& options = {},
                                  int64_t* undefined_lse_rows = nullptr);

}  // namespace sparseattn
