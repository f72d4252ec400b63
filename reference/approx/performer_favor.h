// Performer FAVOR+ — softmax attention approximated by positive orthogonal random features
// (Choromanski et al. 2021, "Rethinking Attention with Performers", §2.2–2.4, Lemma 1).
//
// NOT exact: its registry entry says exact = false, and its error against the oracle
// a1_dense_masked is a measurement (docs/approximations.md), not a pass/fail tolerance.
// Serial float64, like every reference step, so the error measured is the method's, not
// rounding's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn {

struct FavorOptions {
  int64_t num_features = 256;  // m, the number of random features (>= 1)
  uint64_t seed = 0;           // keys the PRNG streams (pattern/prng.h)
  bool orthogonal = true;      // ORF (paper §2.4); false: i.i.d. Gaussian rows (§2.3)
};

// The random projection W: [num_features, head_dim] of one head. Rows are N(0, I_d)
// vectors; with `orthogonal`, each block of head_dim rows is orthogonalized (modified
// Gram–Schmidt) and every row rescaled to the norm of an independent N(0, I_d) vector,
// so each row is still marginally N(0, I_d) (chi-distributed norm, uniform direction)
// and the estimator stays unbiased (paper §2.4). The last block keeps only the
// num_features mod head_dim rows it needs. Gaussians: Box–Muller on prng_bits with
// stream key prng_stream_key(seed, head, 2·block) for directions and 2·block + 1 for
// norms — a pure function of (seed, head), on every machine.
// Throws InvalidArgument("num_features") when < 1, ("head_dim") when < 1.
Tensor<double> favor_projection(int64_t num_features, int64_t head_dim, uint64_t seed,
                                uint64_t head, bool orthogonal);

// The exponents of Lemma 1's positive feature map on rows x [rows, head_dim] (already
// multiplied by scale^{1/2}) for W [m, head_dim]: e_if = w_f·x_i − |x_i|²/2. [rows, m].
// Throws InvalidArgument("W") when W's width is not head_dim.
Tensor<double> favor_exponents(const Tensor<double>& x, const Tensor<double>& W);

// The feature map itself: φ(x_i)_f = exp(e_if − shift_i) / sqrt(m), [rows, m], so that
// E_W[φ(x)·φ(y)] = exp(x·y) when both shifts are 0 (Lemma 1). `shift` [rows] is what the
// caller subtracts for stability (all 0: the plain estimator, as the unbiasedness test
// averages it). Throws InvalidArgument("shift") unless it has one entry per row.
Tensor<double> favor_features(const Tensor<double>& exponents, const std::vector<double>& shift);

// FAVOR+ attention (paper eq. 5 with Lemma 1's φ and §2.4's ORF):
//   q' = scale^{1/2} q,  k' = scale^{1/2} k
//   o  = D⁻¹ (φ(q') (φ(k')ᵀ v)),   D = diag(φ(q') (φ(k')ᵀ 1))
//   lse_i = log D_ii (plus the stabilizing shifts) — the estimate of log Σ_j exp(s_ij).
// Stabilized as the paper's implementation (google-research/performer,
// fast_attention.softmax_kernel_transformation) does — a maximum subtracted before exp:
// query features subtract their row's largest exponent, key features the largest over
// all keys and features (a single constant: keys must share one scale). The paper's code
// subtracts max w·x and keeps −|x|²/2 outside; subtracting the whole exponent's maximum
// also keeps queries of large norm from underflowing. Both shifts cancel in D⁻¹(…) and
// are added back to lse exactly. The implementation's additive
// 1e-6 "numerical stabilizer" is not used: it is a bias, and float64 does not need it.
// Shapes as reference/attention.h; O(seq_len · m · head_dim) per head, no seq_len² term.
// Throws InvalidArgument("pattern (for performer_favor)") unless the pattern is dense,
// not causal and without key padding; ("num_features") when < 1; shape/scale errors as
// every reference step; RuntimeError if a row's estimated normalizer underflows to 0.
AttentionResult performer_favor(const Tensor<double>& q, const Tensor<double>& k,
                                const Tensor<double>& v, const Pattern& pattern,
                                const double* scale, const FavorOptions& options = {});

}  // namespace sparseattn
