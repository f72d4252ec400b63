// Eight-lane float arithmetic for the optimized CPU kernels, written with GCC vector
// extensions instead of intrinsics: with -march=native on an AVX2/FMA machine each v8f
// is one ymm register and `a * b + c` is one vfmadd (the files are compiled with
// -ffp-contract=fast); without AVX the same source compiles to pairs of SSE operations,
// and on any other architecture to whatever GCC can do — the portable fallback is the
// same code, never a second copy that could drift.
//
// Everything here is deterministic: the result of every function depends only on its
// arguments (no lane-order-dependent reductions hidden inside), so a row's arithmetic
// is the same whichever thread runs it.
#pragma once

#include <cstdint>
#include <cstring>

namespace sparseattn::cpu {

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

inline constexpr int kLanes = 8;

// Unaligned load/store: panels start at arbitrary key offsets (window spans).
inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }
inline v8f splat8(float x) { return v8f{x, x, x, x, x, x, x, x}; }

inline float hmax8(v8f v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
  return m;
}
// Lanes summed in a fixed tree order (0+4, 1+5, ...): the same on every thread.
inline float hsum8(v8f v) {
  const float a = (v[0] + v[4]) + (v[2] + v[6]);
  const float b = (v[1] + v[5]) + (v[3] + v[7]);
  return a + b;
}

// exp(x) per lane, about 1 ulp on [-87.3, 88.4] (Cephes expf: x = n ln2 + r, |r| <= ln2/2,
// e^r by a degree-6 polynomial, 2^n built in the exponent bits). Below -87.3 (including
// -inf, a masked score) the result is exactly 0 — never NaN and never a denormal, so a
// masked key contributes nothing to l or to o.
inline v8f exp8(v8f x) {
  const v8f lo = splat8(-87.33654f), hi = splat8(88.37626f);
  v8f xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  // Round x*log2(e) to the nearest integer with the 1.5*2^23 trick (no rounding intrinsic).
  const v8f magic = splat8(12582912.0f);
  const v8f n = (xc * 1.44269504088896341f + magic) - magic;
  v8f r = xc - n * 0.693359375f;  // ln2 split in two so n*ln2_hi is exact
  r = r - n * -2.12194440e-4f;
  v8f p = splat8(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const v8i bits = (__builtin_convertvector(n, v8i) + 127) << 23;
  v8f two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  const v8f e = p * two_n;
  return x < lo ? splat8(0.0f) : e;
}

}  // namespace sparseattn::cpu
