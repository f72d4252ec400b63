// Validation of a kernel's output before it is timed (benchmarks time only
// validated code).
//
// Small problems (seq_len_q · seq_len_k <= kFullOracleMaxPairs): the whole output against
// a1_dense_masked, the float64 oracle. Larger ones, where the O(n²) oracle would take
// minutes: the oracle's formula (contract §2, float64, mask from Pattern::allowed) evaluated
// on kSampledRows rows of every (batch, head) — the first, the last and rows spread
// between them — and the candidate's same rows checked with the one checker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "registry/registry.h"

namespace sparseattn::bench {

inline constexpr int64_t kFullOracleMaxPairs = 2048 * 2048;
inline constexpr int64_t kSampledRows = 16;

// The oracle's answer for a problem: whole (full) or on `rows` of every (batch, head).
// Built once per problem and shared by every kernel benchmarked on it. A bf16 kernel is
// compared with the oracle on its bf16-rounded inputs (docs/numerics.md): validate()
// builds that one on first use, from the same rows, and keeps it in `bf16`.
struct Oracle {
  bool full = false;
  std::vector<int64_t> rows;  // sampled query rows (empty when full)
  Tensor<double> o, lse;
  mutable std::shared_ptr<const Oracle> bf16;  // on bfloat16(float32(q, k, v)); lazily
};
Oracle make_oracle(const Problem& problem);

// "" when `out` (the kernel's result for `problem`) is within the kernel's declared
// tolerance of the oracle (for a bfloat16 kernel: oracle.bf16, built here on first use);
// otherwise the checker's first failure, in words.
std::string validate(const Kernel& kernel, const Problem& problem, const Oracle& oracle,
                     const Output& out);

}  // namespace sparseattn::bench
