// The oracle a kernel is checked against (oracle.h).
#include "api/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "api/tolerance_rule.h"
#include "core/bfloat16.h"
#include "core/error.h"
#include "reference/attention.h"

namespace sparseattn::api {
namespace {

// contract §2 on the sampled rows, float64, keys from Pattern::allowed (the oracle's mask),
// with the problem's grouped kv heads, score pipeline and sinks (contract §2.7-§2.9) as
// a1_dense_masked applies them.
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
        const int64_t bk = b * s.num_kv_heads + h / s.group();  // kv head h / g
        const int64_t position = i + s.seq_len_k - s.seq_len_q;
        const double* q = p.q.ptr() + (bh * s.seq_len_q + i) * s.head_dim;
        const double sink = p.pattern->query_valid(b, i)
                                ? p.mods.sink(h)
                                : -std::numeric_limits<double>::infinity();
        double m = sink;
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          score[j] = -std::numeric_limits<double>::infinity();
          if (!p.pattern->allowed(b, h, i, j)) continue;
          const double* k = p.k.ptr() + (bk * s.seq_len_k + j) * s.head_dim;
          double dot = 0.0;
          for (int64_t d = 0; d < s.head_dim; ++d) dot += q[d] * k[d];
          score[j] = pipeline_score(p.scale * dot, p.mods, b, h, position, j);
          m = std::max(m, score[j]);
        }
        if (m == -std::numeric_limits<double>::infinity()) {
          lse.data[out_row] = m;  // fully masked: o = 0, lse = -inf
          continue;
        }
        double l = std::exp(sink - m);  // 0 without a sink; a row of only the sink: lse = σ
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          if (score[j] == -std::numeric_limits<double>::infinity()) continue;
          const double e = std::exp(score[j] - m);
          l += e;
          const double* v = p.v.ptr() + (bk * s.seq_len_k + j) * s.head_dim_v;
          for (int64_t d = 0; d < s.head_dim_v; ++d) o.data[out_row * s.head_dim_v + d] += e * v[d];
        }
        for (int64_t d = 0; d < s.head_dim_v; ++d) o.data[out_row * s.head_dim_v + d] /= l;
        lse.data[out_row] = m + std::log(l);
      }
}

// The oracle of the whole output (full) or of `rows` of every (batch, head).
Oracle oracle_on(const Problem& problem, bool full, std::vector<int64_t> rows) {
  if (full) {
    AttentionResult ref = a1_dense_masked(problem.q, problem.k, problem.v, *problem.pattern,
                                          &problem.scale, problem.mods);
    return full_oracle(problem, std::move(ref.o), std::move(ref.lse));
  }
  Oracle oracle;
  oracle.batch = problem.shape.batch;
  oracle.heads = problem.shape.num_heads;
  oracle.seq_len_q = problem.shape.seq_len_q;
  oracle.rows = std::move(rows);
  sampled_oracle(problem, oracle.rows, oracle.o, oracle.lse);
  return oracle;
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

Oracle full_oracle(const Problem& problem, Tensor<double> o, Tensor<double> lse) {
  const AttentionShape& s = problem.shape;
  require(o.shape == Shape{s.batch, s.num_heads, s.seq_len_q, s.head_dim_v} &&
              lse.shape == Shape{s.batch, s.num_heads, s.seq_len_q},
          "oracle", shape_text(o.shape) + " and " + shape_text(lse.shape),
          "must be o [batch, num_heads, seq_len_q, head_dim_v] and lse [batch, num_heads, "
          "seq_len_q] of the problem");
  Oracle oracle;
  oracle.full = true;
  oracle.batch = s.batch;
  oracle.heads = s.num_heads;
  oracle.seq_len_q = s.seq_len_q;
  oracle.o = std::move(o);
  oracle.lse = std::move(lse);
  return oracle;
}

Tensor<double> round_inputs(const Tensor<double>& x, DType dtype) {
  if (dtype != DType::float16 && dtype != DType::bfloat16) return x;
  Tensor<double> y = x;
  for (double& e : y.data)
    e = dtype == DType::bfloat16
            ? round_to_bfloat16(e)
            : round_to(static_cast<double>(static_cast<float>(e)), LowDtype::float16);
  return y;
}

const Oracle& oracle_for(DType dtype, const Problem& problem, const Oracle& oracle) {
  if ((dtype != DType::float16 && dtype != DType::bfloat16) || oracle.inputs != DType::float64)
    return oracle;
  const int slot = dtype == DType::float16 ? 0 : 1;
  if (oracle.rounded[slot] && oracle.rounded_for[slot] == problem.q.ptr())
    return *oracle.rounded[slot];
  Problem rounded = problem;
  rounded.q = round_inputs(problem.q, dtype);
  rounded.k = round_inputs(problem.k, dtype);
  rounded.v = round_inputs(problem.v, dtype);
  // Inputs the dtype holds exactly (the demo's multiples of 1/32): the oracle is the same.
  if (rounded.q.data == problem.q.data && rounded.k.data == problem.k.data &&
      rounded.v.data == problem.v.data)
    return oracle;
  Oracle on_rounded = oracle_on(rounded, oracle.full, oracle.rows);
  on_rounded.inputs = dtype;
  oracle.rounded[slot] = std::make_shared<const Oracle>(std::move(on_rounded));
  oracle.rounded_for[slot] = problem.q.ptr();
  return *oracle.rounded[slot];
}

Tensor<double> first_heads(const Tensor<double>& x, int64_t heads) {
  require(x.shape.size() >= 2 && heads >= 0 && heads <= x.shape[1], "heads", heads,
          "must be in [0, " + std::to_string(x.shape.size() >= 2 ? x.shape[1] : 0) +
              "] (the tensor's heads)");
  Shape shape = x.shape;
  shape[1] = heads;
  Tensor<double> y(shape);
  const int64_t per_head = x.shape[1] == 0 ? 0 : x.numel() / (x.shape[0] * x.shape[1]);
  for (int64_t b = 0; b < x.shape[0]; ++b)
    std::copy_n(x.ptr() + b * x.shape[1] * per_head, heads * per_head,
                y.ptr() + b * heads * per_head);
  return y;
}

}  // namespace sparseattn::api
