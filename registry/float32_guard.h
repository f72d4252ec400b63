// contract §4 "any finite scale": what a float32 kernel does with a scale (or inputs)
// beyond float32's range. It either computes the oracle's result within its tolerance or
// refuses before anything is written, naming the argument and the reason — never o = 0,
// lse = -inf or NaN.
//
// The float32 kernels fold the scale into their copy of q (S = (scale·q)·kᵀ) and keep an
// online maximum, so every intermediate is bounded by the largest scaled score
// |s_ij| <= |scale|·‖q_i‖₂·‖k_j‖₂ (Cauchy–Schwarz; every partial sum of the dot product
// obeys the same bound) and lse_i <= max_j s_ij + log(seq_len_k). The plan:
//   1. q, k, v must be representable in float32 (|x| <= 3.4e38): refused by name if not.
//   2. |scale|·max‖q_i‖·max‖k_j‖ and |scale|·max|q| must stay below kFloat32ScoreLimit
//      (1e37, float32's 3.4e38 less headroom for lse): refused naming `scale` otherwise —
//      the lse itself (≈ the largest score) could not be written as float32.
//   3. A scale float32 cannot hold accurately (|scale| < FLT_MIN, subnormal or zero
//      after rounding) is folded into q in float64 instead: q32 = float(q·scale),
//      scale32 = 1. Ordinary scales keep the kernels' own path, bit for bit.
// Header-only, in the registry's interface layer, so that every float32 entry point -- the
// CPU ladder (optimized/cpu/entries.cpp) and the CUDA upload (optimized/cuda/
// device_problem.cu, which adds the float16 input range) -- applies the same rule.
#pragma once

#include <cfloat>
#include <cmath>
#include <string>

#include "core/error.h"
#include "registry/registry.h"

namespace sparseattn {

inline constexpr double kFloat32ScoreLimit = 1e37;

namespace detail {

// max |x| over t (a NaN is skipped, as std::max skips it), with four independent maxima.
// Not inlined on purpose: inlined into plan_float32, GCC kept the running maximum in a
// stack slot across the loop (a store-to-load chain per element, ~5 cycles each), which
// made this the slowest part of a BigBird entry at n = 16384.
[[gnu::noinline]] inline double max_abs(const Tensor<double>& t) {
  double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;
  const double* x = t.data.data();
  const size_t n = t.data.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const double a0 = std::fabs(x[i]), a1 = std::fabs(x[i + 1]);
    const double a2 = std::fabs(x[i + 2]), a3 = std::fabs(x[i + 3]);
    m0 = a0 > m0 ? a0 : m0;
    m1 = a1 > m1 ? a1 : m1;
    m2 = a2 > m2 ? a2 : m2;
    m3 = a3 > m3 ? a3 : m3;
  }
  for (; i < n; ++i) m0 = std::fabs(x[i]) > m0 ? std::fabs(x[i]) : m0;
  const double m01 = m1 > m0 ? m1 : m0, m23 = m3 > m2 ? m3 : m2;
  return m23 > m01 ? m23 : m01;
}

}  // namespace detail

// What a float32 kernel should be given: its q (q32, or q·scale rounded once) and scale.
struct Float32Plan {
  const Tensor<float>* q32;  // the problem's q32, or `prescaled`
  float scale32;
  Tensor<float> prescaled;   // filled only when the scale is folded in float64
};

// Applies the rule above for kernel `kernel_name`. Throws InvalidArgument("scale" | "q" |
// "k" | "v", value, reason) before any work. O(numel(q) + numel(k) + numel(v)).
inline void plan_float32(const Problem& p, const char* kernel_name, Float32Plan& plan) {
  auto max_abs = [](const Tensor<double>& t) { return detail::max_abs(t); };
  // Largest row norm of a [.., rows, dim] tensor, called after every |x| <= FLT_MAX was
  // checked: then x² <= 1.2e77 and a row's plain sum of squares cannot overflow float64.
  // Only a row whose sum underflows toward float64's denormals (< 1e-290) is recomputed
  // scaled by its largest element. (The plain sum is one vectorized pass; the scaled one,
  // a division per element, took a quarter of a BigBird entry's time at n = 16384.)
  auto max_row_norm = [](const Tensor<double>& t, int64_t dim) {
    double m = 0.0;
    for (int64_t r = 0; dim > 0 && r < t.numel() / dim; ++r) {
      const double* x = t.data.data() + r * dim;
      double ss = 0.0;
      for (int64_t d = 0; d < dim; ++d) ss += x[d] * x[d];
      if (ss >= 1e-290) {
        m = std::max(m, std::sqrt(ss));
        continue;
      }
      double big = 0.0;
      for (int64_t d = 0; d < dim; ++d) big = std::max(big, std::fabs(x[d]));
      if (big == 0.0) continue;
      ss = 0.0;
      for (int64_t d = 0; d < dim; ++d) ss += (x[d] / big) * (x[d] / big);
      m = std::max(m, big * std::sqrt(ss));
    }
    return m;
  };
  const std::string why = std::string(" is beyond float32's range (3.4e38): the float32 kernel ") +
                          kernel_name + " cannot hold it; use a float64 kernel (a1_dense_masked)";
  const struct { const char* name; const Tensor<double>* t; } inputs[] = {
      {"q", &p.q}, {"k", &p.k}, {"v", &p.v}};
  for (const auto& in : inputs) {
    const double m = max_abs(*in.t);
    require(m <= FLT_MAX, in.name, "a tensor with max |x| = " + to_text(m), "|x| = " + to_text(m) + why);
  }
  const double s = std::fabs(p.scale);
  const double q_norm = max_row_norm(p.q, p.shape.head_dim);
  const double k_norm = max_row_norm(p.k, p.shape.head_dim);
  const double score_bound = s * q_norm * k_norm;  // may be inf in float64: refused
  const double q_scaled = s * max_abs(p.q);
  if (!(score_bound <= kFloat32ScoreLimit) || !(q_scaled <= kFloat32ScoreLimit))
    throw InvalidArgument(
        "scale", to_text(p.scale),
        "scaled scores may reach |scale|·max‖q_i‖·max‖k_j‖ = " + to_text(score_bound) +
            " (and lse with them), beyond float32's range (3.4e38, limit " +
            to_text(kFloat32ScoreLimit) + " with headroom) for the float32 kernel " + kernel_name +
            "; use a float64 kernel (a1_dense_masked) or a smaller --scale");
  plan.q32 = &p.q32;
  plan.scale32 = static_cast<float>(p.scale);
  if (s != 0.0 && s < FLT_MIN) {  // float32 would round the scale to a subnormal or 0
    plan.prescaled = Tensor<float>(p.q.shape);
    for (size_t i = 0; i < p.q.data.size(); ++i)
      plan.prescaled.data[i] = static_cast<float>(p.q.data[i] * p.scale);
    plan.q32 = &plan.prescaled;
    plan.scale32 = 1.0f;
  }
}

}  // namespace sparseattn
