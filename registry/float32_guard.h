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
#include "core/field.h"
#include "registry/registry.h"

namespace sparseattn {

inline constexpr double kFloat32ScoreLimit = 1e37;

namespace detail {

// max |x| over a tensor and the largest Euclidean norm of its rows of `dim` elements (dim
// 0: no norms), in one pass. A NaN is skipped, as std::max skips it.
//   - Four independent maxima and partial sums of squares: one running value is a chain
//     of dependent instructions (~4 cycles per element), and GCC does not split a
//     floating-point reduction itself.
//   - Not inlined: inlined into plan_float32, GCC kept the running maximum in a stack slot
//     (a store-to-load chain per element). With six passes like that, the guard took a
//     quarter of a BigBird entry's time at n = 16384.
//   - A row's plain sum of squares cannot overflow once |x| <= FLT_MAX (checked by the
//     caller before it uses the norm): x² <= 1.2e77. A row whose sum underflows toward
//     float64's denormals (< 1e-290) is recomputed scaled by its largest element.
//   - T = float: the float32 copies, read in float64 arithmetic (a problem without float64
//     inputs, below).
struct Bound {
  double max_abs = 0.0;
  double max_row_norm = 0.0;
};
template <class T>
[[gnu::noinline]] Bound bound_of(const Tensor<T>& t, int64_t dim) {
  Bound b;
  const T* x = t.data.data();
  const int64_t n = t.numel();
  const int64_t len = dim > 0 ? dim : n;  // without norms: one "row", the whole tensor
  for (int64_t r0 = 0; len > 0 && r0 + len <= n; r0 += len) {
    const T* row = x + r0;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t d = 0;
    for (; d + 4 <= len; d += 4) {
      const double x0 = row[d], x1 = row[d + 1], x2 = row[d + 2], x3 = row[d + 3];  // exact
      a0 = std::fabs(x0) > a0 ? std::fabs(x0) : a0;
      a1 = std::fabs(x1) > a1 ? std::fabs(x1) : a1;
      a2 = std::fabs(x2) > a2 ? std::fabs(x2) : a2;
      a3 = std::fabs(x3) > a3 ? std::fabs(x3) : a3;
      s0 += x0 * x0;
      s1 += x1 * x1;
      s2 += x2 * x2;
      s3 += x3 * x3;
    }
    for (; d < len; ++d) {
      const double x0 = row[d];
      a0 = std::fabs(x0) > a0 ? std::fabs(x0) : a0;
      s0 += x0 * x0;
    }
    const double a01 = a1 > a0 ? a1 : a0, a23 = a3 > a2 ? a3 : a2;
    const double big = a23 > a01 ? a23 : a01;
    b.max_abs = big > b.max_abs ? big : b.max_abs;
    if (dim <= 0 || big == 0.0) continue;
    double ss = (s0 + s1) + (s2 + s3);
    double norm = std::sqrt(ss);
    if (!(ss >= 1e-290)) {  // tiny (or NaN): scaled by the largest element
      ss = 0.0;
      for (d = 0; d < len; ++d) ss += (double(row[d]) / big) * (double(row[d]) / big);
      norm = big * std::sqrt(ss);
    }
    b.max_row_norm = norm > b.max_row_norm ? norm : b.max_row_norm;
  }
  return b;
}

}  // namespace detail

// What a float32 kernel should be given: its q (q32, or q·scale rounded once) and scale.
struct Float32Plan {
  const Tensor<float>* q32;  // the problem's q32, or `prescaled`
  float scale32;
  Tensor<float> prescaled;   // filled only when the scale is folded in float64
};

// Applies the rule above for kernel `kernel_name`. Throws FieldError (Field::scale, q, k or
// v; core/field.h) before any work. O(numel(q) + numel(k) + numel(v)).
// A problem built without float64 inputs (p.q empty, q32 filled: the packed walk's float32
// path, api/layout_walk.h) is bounded on its float32 copies: an input beyond float32's range
// is inf there (refused as such: |x| = inf), the norms differ from the float64 ones by at
// most ~1e-7 relative (far inside the limit's headroom), and a scale folded into q is
// folded into the float32 copy (float(float(q)·scale), one more rounding).
inline void plan_float32(const Problem& p, const char* kernel_name, Float32Plan& plan) {
  const bool f32_only = p.q.data.empty() && !p.q32.data.empty();
  // One pass per tensor: max |x| (all three) and the largest row norm (q and k).
  const detail::Bound bq = f32_only ? detail::bound_of(p.q32, p.shape.head_dim)
                                    : detail::bound_of(p.q, p.shape.head_dim);
  const detail::Bound bk = f32_only ? detail::bound_of(p.k32, p.shape.head_dim)
                                    : detail::bound_of(p.k, p.shape.head_dim);
  const detail::Bound bv = f32_only ? detail::bound_of(p.v32, 0) : detail::bound_of(p.v, 0);
  const std::string why = std::string(" is beyond float32's range (3.4e38): the float32 kernel ") +
                          kernel_name + " cannot hold it; use a float64 kernel (a1_dense_masked)";
  const struct { Field field; double max_abs; } inputs[] = {
      {Field::q, bq.max_abs}, {Field::k, bk.max_abs}, {Field::v, bv.max_abs}};
  for (const auto& in : inputs) {
    const double m = in.max_abs;
    require_field(m <= FLT_MAX, in.field, "", "a tensor with max |x| = " + to_text(m),
                  "|x| = " + to_text(m) + why);
  }
  const double s = std::fabs(p.scale);
  const double q_norm = bq.max_row_norm;
  const double k_norm = bk.max_row_norm;
  const double score_bound = s * q_norm * k_norm;  // may be inf in float64: refused
  const double q_scaled = s * bq.max_abs;
  if (!(score_bound <= kFloat32ScoreLimit) || !(q_scaled <= kFloat32ScoreLimit))
    throw FieldError(
        Field::scale, "", to_text(p.scale),
        "scaled scores may reach |scale|·max‖q_i‖·max‖k_j‖ = " + to_text(score_bound) +
            " (and lse with them), beyond float32's range (3.4e38, limit " +
            to_text(kFloat32ScoreLimit) + " with headroom) for the float32 kernel " + kernel_name +
            "; use a float64 kernel (a1_dense_masked) or a smaller --scale");
  plan.q32 = &p.q32;
  plan.scale32 = static_cast<float>(p.scale);
  if (s != 0.0 && s < FLT_MIN) {  // float32 would round the scale to a subnormal or 0
    plan.prescaled = Tensor<float>(p.q32.shape);
    for (size_t i = 0; i < p.q32.data.size(); ++i)
      plan.prescaled.data[i] = static_cast<float>(
          (f32_only ? static_cast<double>(p.q32.data[i]) : p.q.data[i]) * p.scale);
    plan.q32 = &plan.prescaled;
    plan.scale32 = 1.0f;
  }
}

}  // namespace sparseattn
