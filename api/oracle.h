// The oracle's answer that a kernel's output is checked against before it is timed
// (contract §4.1, §4.2; the harness is api/measure.h).
//
// Small problems (seq_len_q · seq_len_k <= kFullOracleMaxPairs): the whole output of
// a1_dense_masked, the float64 oracle. Larger ones, where the O(n²) oracle would take
// minutes: the oracle's formula (contract §2, float64, mask from Pattern::allowed) evaluated
// on kSampledRows rows of every (batch, head) — the first, the last and rows spread
// between them. A program that runs a1_dense_masked itself (the demo, the real-data job)
// wraps that output instead (full_oracle), possibly on its first heads only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "registry/registry.h"

namespace sparseattn::api {

inline constexpr int64_t kFullOracleMaxPairs = 2048 * 2048;
inline constexpr int64_t kSampledRows = 16;

// The oracle for heads [0, heads) of every batch of a problem: whole (full) or on `rows`.
// A half-precision kernel is compared with the oracle on its rounded inputs (contract
// §4.3): the check builds that one on first use, from the same rows, and keeps it here.
struct Oracle {
  bool full = false;
  int64_t batch = 0, heads = 0, seq_len_q = 0;
  std::vector<int64_t> rows;  // sampled query rows (empty when full)
  // full: o [batch, heads, seq_len_q, head_dim_v], lse [batch, heads, seq_len_q];
  // sampled: o [batch * heads * rows, head_dim_v], lse [batch * heads * rows, 1].
  Tensor<double> o, lse;
  DType inputs = DType::float64;  // the dtype its q, k, v were rounded to (float64: none)
  // On the float16- and bfloat16-rounded inputs of the problem `rounded_for[i]` points to.
  mutable std::shared_ptr<const Oracle> rounded[2];
  mutable const double* rounded_for[2] = {nullptr, nullptr};
};

// The oracle of `problem`: full up to kFullOracleMaxPairs, sampled rows above.
Oracle make_oracle(const Problem& problem);

// Wraps a1_dense_masked's result on `problem` (o [B, H, Lq, Dv], lse [B, H, Lq]) as a full
// oracle over its H heads. Throws InvalidArgument("oracle") when the shapes disagree.
Oracle full_oracle(const Problem& problem, Tensor<double> o, Tensor<double> lse);

// q, k or v as a kernel of `dtype` sees it: bfloat16(float32(x)), float16(float32(x)) (the
// rounding of core/bfloat16.h and of the CUDA upload); float32 and float64 unchanged, as
// their oracle takes the unrounded inputs (contract §4.3).
Tensor<double> round_inputs(const Tensor<double>& x, DType dtype);

// The oracle a kernel of `dtype` is compared with on `problem`: `oracle` itself, or for a
// float16/bfloat16 kernel the same kind of oracle on the rounded inputs (built once and
// kept in `oracle`; `oracle` itself when rounding changes no input).
const Oracle& oracle_for(DType dtype, const Problem& problem, const Oracle& oracle);

// x[:, :heads] of a [batch, H, ...] tensor, every batch (a copy).
Tensor<double> first_heads(const Tensor<double>& x, int64_t heads);

}  // namespace sparseattn::api
