#include "bench/validate.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/bfloat16.h"
#include "core/check.h"
#include "reference/attention.h"

namespace sparseattn::bench {
namespace {

// Rows of `x` ([batch, heads, seq_len_q, cols] flattened as rows of `cols`) at `rows`
// of every (batch, head), as a float64 tensor [batch * heads * rows.size(), cols].
template <class T>
Tensor<double> gather_rows(const Tensor<T>& x, int64_t cols, int64_t seq_len_q,
                           const std::vector<int64_t>& rows) {
  const int64_t slices = x.numel() / (seq_len_q * cols);
  Tensor<double> g({slices * static_cast<int64_t>(rows.size()), cols});
  int64_t at = 0;
  for (int64_t s = 0; s < slices; ++s)
    for (int64_t i : rows)
      for (int64_t c = 0; c < cols; ++c) g.data[at++] = x.data[(s * seq_len_q + i) * cols + c];
  return g;
}

// contract §2 on the sampled rows, float64, keys from Pattern::allowed (the oracle's mask).
void sampled_oracle(const Problem& p, const std::vector<int64_t>& rows, Tensor<double>& o,
                    Tensor<double>& lse) {
  const AttentionShape& s = p.shape;
  const int64_t nr = static_cast<int64_t>(rows.size());
  o = Tensor<double>({s.batch * s.num_heads * nr, s.head_dim_v}, 0.0);
  lse = Tensor<double>({s.batch * s.num_heads * nr, 1}, 0.0);
  std::vector<double> score(static_cast<size_t>(s.seq_len_k));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.num_heads; ++h)
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = rows[r], bh = b * s.num_heads + h, out_row = bh * nr + r;
        const double* q = p.q.ptr() + (bh * s.seq_len_q + i) * s.head_dim;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          score[j] = -std::numeric_limits<double>::infinity();
          if (!p.pattern->allowed(b, h, i, j)) continue;
          const double* k = p.k.ptr() + (bh * s.seq_len_k + j) * s.head_dim;
          double dot = 0.0;
          for (int64_t d = 0; d < s.head_dim; ++d) dot += q[d] * k[d];
          score[j] = p.scale * dot;
          m = std::max(m, score[j]);
        }
        if (m == -std::numeric_limits<double>::infinity()) {
          lse.data[out_row] = m;  // fully masked: o = 0, lse = -inf
          continue;
        }
        double l = 0.0;
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          if (score[j] == -std::numeric_limits<double>::infinity()) continue;
          const double e = std::exp(score[j] - m);
          l += e;
          const double* v = p.v.ptr() + (bh * s.seq_len_k + j) * s.head_dim_v;
          for (int64_t d = 0; d < s.head_dim_v; ++d) o.data[out_row * s.head_dim_v + d] += e * v[d];
        }
        for (int64_t d = 0; d < s.head_dim_v; ++d) o.data[out_row * s.head_dim_v + d] /= l;
        lse.data[out_row] = m + std::log(l);
      }
}

template <class T>
std::string compare(const Tensor<T>& o, const Tensor<T>& lse, const Tensor<double>& o_ref,
                    const Tensor<double>& lse_ref, Tolerance tol) {
  const CheckReport ro = check_close(o, o_ref, tol);
  if (!ro.pass) return "o: " + ro.reason;
  const CheckReport rl = check_close(lse, lse_ref, tol);
  if (!rl.pass) return "lse: " + rl.reason;
  return "";
}

// The oracle of the whole output (full) or of `rows` of every (batch, head).
Oracle oracle_on(const Problem& problem, bool full, std::vector<int64_t> rows) {
  Oracle oracle;
  if (full) {
    AttentionResult ref =
        a1_dense_masked(problem.q, problem.k, problem.v, *problem.pattern, &problem.scale);
    oracle.full = true;
    oracle.o = std::move(ref.o);
    oracle.lse = std::move(ref.lse);
    return oracle;
  }
  oracle.rows = std::move(rows);
  sampled_oracle(problem, oracle.rows, oracle.o, oracle.lse);
  return oracle;
}

// The oracle of a bf16 kernel: the same rows, on bfloat16(float32(x)) inputs.
const Oracle& bf16_oracle(const Problem& problem, const Oracle& oracle) {
  if (!oracle.bf16) {
    Problem rounded = problem;
    rounded.q = round_to_bfloat16(problem.q);
    rounded.k = round_to_bfloat16(problem.k);
    rounded.v = round_to_bfloat16(problem.v);
    oracle.bf16 = std::make_shared<const Oracle>(oracle_on(rounded, oracle.full, oracle.rows));
  }
  return *oracle.bf16;
}

}  // namespace

Oracle make_oracle(const Problem& problem) {
  const AttentionShape& s = problem.shape;
  const bool full = s.seq_len_q * s.seq_len_k <= kFullOracleMaxPairs;
  std::vector<int64_t> rows;
  for (int64_t r = 0; !full && r < kSampledRows; ++r)
    rows.push_back(r * (s.seq_len_q - 1) / (kSampledRows - 1));
  return oracle_on(problem, full, std::move(rows));
}

std::string validate(const Kernel& kernel, const Problem& problem, const Oracle& oracle_in,
                     const Output& out) {
  const Tolerance tol{kernel.atol, kernel.rtol};
  const Oracle& oracle =
      kernel.dtype == DType::bfloat16 ? bf16_oracle(problem, oracle_in) : oracle_in;
  const AttentionShape& s = problem.shape;
  auto check = [&](const auto& o, const auto& lse) {
    if (oracle.full) return compare(o, lse, oracle.o, oracle.lse, tol);
    return compare(gather_rows(o, s.head_dim_v, s.seq_len_q, oracle.rows),
                   gather_rows(lse, 1, s.seq_len_q, oracle.rows), oracle.o, oracle.lse, tol);
  };
  return kernel.dtype == DType::float64 ? check(out.o, out.lse) : check(out.o32, out.lse32);
}

}  // namespace sparseattn::bench
