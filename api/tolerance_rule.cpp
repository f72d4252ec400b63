#include "api/tolerance_rule.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace sparseattn::api {

namespace {

// Round to `bits` significant bits (implicit bit included), smallest exponent of a
// subnormal step `min_step_exp`, largest finite `max_finite`.
double round_sig(double x, int bits, int min_step_exp, double max_finite) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  const int step = std::max(e - bits, min_step_exp);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -step)), step);  // ties to even
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
  return r;
}

}  // namespace

double round_to(double x, LowDtype dtype) {
  switch (dtype) {
    case LowDtype::float32: return static_cast<double>(static_cast<float>(x));
    case LowDtype::float16: return round_sig(x, 11, -24, 65504.0);
    case LowDtype::bfloat16: return round_sig(x, 8, -133, 3.3895313892515355e38);
  }
  return x;
}

const char* low_dtype_name(LowDtype dtype) {
  switch (dtype) {
    case LowDtype::float32: return "float32";
    case LowDtype::float16: return "float16";
    case LowDtype::bfloat16: return "bfloat16";
  }
  return "?";
}

AttentionResult naive_low_precision(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Pattern& pattern,
                                    const double* scale, LowDtype dt) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  const float sc = static_cast<float>(
      round_to(scale ? *scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim)), dt));
  auto rounded = [&](const Tensor<double>& x) {
    std::vector<float> r(x.data.size());
    for (size_t e = 0; e < r.size(); ++e) r[e] = static_cast<float>(round_to(x.data[e], dt));
    return r;
  };
  const std::vector<float> qr = rounded(q), kr = rounded(k), vr = rounded(v);
  AttentionResult out;
  out.o = Tensor<double>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v}, 0.0);
  out.lse = Tensor<double>({s.batch, s.num_heads, s.seq_len_q}, -INFINITY);
  std::vector<float> sv(static_cast<size_t>(s.seq_len_k));
  std::vector<int64_t> keys;
  std::vector<float> acc(static_cast<size_t>(s.head_dim_v));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t bh = b * s.num_heads + h;
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        const float* qi = qr.data() + (bh * s.seq_len_q + i) * s.head_dim;
        keys.clear();
        float m = -INFINITY;
        for (int64_t j = 0; j < s.seq_len_k; ++j) {
          if (!pattern.allowed(b, h, i, j)) continue;
          const float* kj = kr.data() + (bh * s.seq_len_k + j) * s.head_dim;
          float dot = 0.0f;  // float32 accumulation of a low-precision matmul
          for (int64_t d = 0; d < s.head_dim; ++d) dot += qi[d] * kj[d];
          const float x = static_cast<float>(
              round_to(static_cast<float>(round_to(dot, dt)) * sc, dt));
          sv[static_cast<size_t>(keys.size())] = x;
          keys.push_back(j);
          m = std::max(m, x);
        }
        if (keys.empty()) continue;
        float z = 0.0f;
        for (size_t t = 0; t < keys.size(); ++t) z += std::exp(sv[t] - m);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (size_t t = 0; t < keys.size(); ++t) {
          const float p = static_cast<float>(round_to(std::exp(sv[t] - m) / z, dt));
          const float* vj = vr.data() + (bh * s.seq_len_k + keys[t]) * s.head_dim_v;
          for (int64_t d = 0; d < s.head_dim_v; ++d) acc[d] += p * vj[d];
        }
        double* oi = out.o.ptr() + (bh * s.seq_len_q + i) * s.head_dim_v;
        for (int64_t d = 0; d < s.head_dim_v; ++d) oi[d] = round_to(acc[d], dt);
        out.lse.data[bh * s.seq_len_q + i] = round_to(m + std::log(z), dt);
      }
    }
  return out;
}

ReferenceErrorVerdict judge_reference_error(const Tensor<double>& cand, const Tensor<double>& oracle,
                                            const Tensor<double>& naive, const ToleranceRule& rule,
                                            const std::vector<uint8_t>& skip) {
  const int64_t rows = oracle.shape.size() >= 3 ? oracle.shape[2] : oracle.numel();
  const int64_t heads = oracle.shape.size() >= 3 ? oracle.shape[1] : 1;
  const int64_t width = oracle.shape.size() == 4 ? oracle.shape[3] : 1;
  double cmax = 0, csum = 0, nmax = 0, nsum = 0;
  int64_t n = 0;
  bool nonfinite = false;
  auto err = [](double x, double ref) -> double {
    if (x == ref) return 0.0;
    if (!std::isfinite(x) || !std::isfinite(ref)) return INFINITY;
    return std::fabs(x - ref);
  };
  for (int64_t e = 0; e < oracle.numel(); ++e) {
    const int64_t row = e / width, i = row % rows, b = row / (rows * heads);
    if (!skip.empty() && skip[static_cast<size_t>(b * rows + i)]) continue;
    const double ce = err(cand.data[e], oracle.data[e]), ne = err(naive.data[e], oracle.data[e]);
    if (!std::isfinite(ce)) nonfinite = true;
    cmax = std::max(cmax, ce), nmax = std::max(nmax, std::isfinite(ne) ? ne : 0.0);
    csum += std::isfinite(ce) ? ce : 0.0, nsum += std::isfinite(ne) ? ne : 0.0;
    ++n;
  }
  const double cmean = n ? csum / n : 0.0, nmean = n ? nsum / n : 0.0;
  // Nothing compared (every row skipped) is no pass (contract §4.9).
  const bool pass = n > 0 && !nonfinite && cmax <= rule.factor * nmax + rule.floor &&
                    cmean <= rule.factor * nmean + rule.floor;
  ReferenceErrorVerdict v;
  v.naive_dtype = rule.dtype, v.factor = rule.factor, v.floor = rule.floor;
  v.candidate_max = cmax, v.candidate_mean = cmean, v.naive_max = nmax, v.naive_mean = nmean;
  v.pass = pass;
  return v;
}

}  // namespace sparseattn::api
