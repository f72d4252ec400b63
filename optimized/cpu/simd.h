// Float vectors for the optimized CPU kernels, written with GCC vector extensions instead
// of intrinsics: inside an ISA region (isa_target.h) `Vec` is one ymm register (8 floats,
// the avx2 build) or one zmm register (16 floats, the avx512 build), and `a * b + c` is one
// vfmadd (the files are compiled with -ffp-contract=fast). The kernels are written once
// against `Vec` and kLanes; the two builds are the same source, never two copies that
// could drift.
//
// Everything here is deterministic: the result of every function depends only on its
// arguments (no lane-order-dependent reductions hidden inside), so a row's arithmetic
// is the same whichever thread runs it.
#pragma once

#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "optimized/cpu/isa_target.h"

SPARSEATTN_ISA_BEGIN

template <int N>
struct Simd {
  typedef float f __attribute__((vector_size(4 * N)));
  typedef int32_t i __attribute__((vector_size(4 * N)));
};

#if defined(SPARSEATTN_ISA_AVX512)
inline constexpr int kLanes = 16;  // floats per zmm register
#else
inline constexpr int kLanes = 8;   // floats per ymm register
#endif
using Vec = Simd<kLanes>::f;
using v8f = Simd<8>::f;  // the backward kernels' 8-lane vectors (avx2 build only)

// Unaligned load/store: panels start at arbitrary key offsets (window spans).
template <class V = Vec>
inline V loadv(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void storev(float* p, V v) { std::memcpy(p, &v, sizeof v); }
// x in every lane, one vbroadcastss: x − (+0) is x for every x (−0 included) under
// round-to-nearest, so GCC drops the subtraction; V{} + x cannot be dropped (−0 + 0 is +0)
// and compiled to a scalar add before the broadcast, in inner loops too.
template <class V = Vec>
inline V splat(float x) { return x - V{}; }

inline constexpr int lanes_of(v8f) { return 8; }
inline constexpr int lanes_of(Simd<16>::f) { return 16; }

// The maximum of the lanes by a shuffle tree (log2(lanes) shuffle + max steps) instead of
// a scalar loop whose compares wait on each other. Max is exact in any order.
inline float hmax(v8f v) {
  using VI = Simd<8>::i;
  v = v > __builtin_shuffle(v, VI{4, 5, 6, 7, 0, 1, 2, 3}) ? v : __builtin_shuffle(v, VI{4, 5, 6, 7, 0, 1, 2, 3});
  v = v > __builtin_shuffle(v, VI{2, 3, 0, 1, 6, 7, 4, 5}) ? v : __builtin_shuffle(v, VI{2, 3, 0, 1, 6, 7, 4, 5});
  v = v > __builtin_shuffle(v, VI{1, 0, 3, 2, 5, 4, 7, 6}) ? v : __builtin_shuffle(v, VI{1, 0, 3, 2, 5, 4, 7, 6});
  return v[0];
}
// 16 lanes: the larger of the two 8-lane halves, then the 8-lane tree.
inline float hmax(Simd<16>::f v) {
  v8f lo, hi;
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
  return hmax(lo > hi ? lo : hi);
}
// Lanes summed in a fixed tree order (lane i + lane i + N/2, halving): the same on every
// thread. For 8 lanes: ((0+4) + (2+6)) + ((1+5) + (3+7)).
template <class V>
inline float hsum(V v) {
  constexpr int n = lanes_of(V{});
  float t[n];
  std::memcpy(t, &v, sizeof v);
  for (int half = n / 2; half >= 1; half /= 2)
    for (int i = 0; i < half; ++i) t[i] = t[i] + t[i + half];
  return t[0];
}

// exp(x) per lane, about 1 ulp on [-87.3, 88.4] (Cephes expf: x = n ln2 + r, |r| <= ln2/2,
// e^r by a degree-6 polynomial, 2^n built in the exponent bits). Below -87.3 (including
// -inf, a masked score) the result is exactly 0 — never NaN and never a denormal, so a
// masked key contributes nothing to l or to o.
template <class V>
inline V vexp(V x) {
  using VI = typename Simd<lanes_of(V{})>::i;
  const V lo = splat<V>(-87.33654f), hi = splat<V>(88.37626f);
  V xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  // Round x*log2(e) to the nearest integer with the 1.5*2^23 trick (no rounding intrinsic).
  const V magic = splat<V>(12582912.0f);
  const V n = (xc * 1.44269504088896341f + magic) - magic;
  V r = xc - n * 0.693359375f;  // ln2 split in two so n*ln2_hi is exact
  r = r - n * -2.12194440e-4f;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  V two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  const V e = p * two_n;
  return x < lo ? splat<V>(0.0f) : e;
}

#if defined(SPARSEATTN_ISA_AVX512)
// The same exp on 16 lanes with two AVX-512 instructions the vector extensions cannot
// spell: vrndscaleps rounds x·log2(e) to the nearest integer n (one instruction instead of
// the 1.5·2^23 add and subtract) and vscalefps multiplies by 2^n (one instead of convert,
// add, shift and multiply; it also gives +inf past 88.7 where the generic version clamps).
// Same reduction and polynomial, so the same values up to that overflow; below -87.3 the
// result is exactly 0 (masked), a NaN stays NaN. 5 fewer instructions per 16 scores.
inline Simd<16>::f vexp(Simd<16>::f xv) {
  const __m512 x = reinterpret_cast<__m512>(xv);
  const __m512 lo = _mm512_set1_ps(-87.33654f);
  const __mmask16 live = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);  // x >= lo, or NaN
  // The masked forms with an explicit source: GCC 12's unmasked ones pass an undefined
  // vector that -Wuninitialized reports (a known false positive).
  const __m512 xc = _mm512_mask_max_ps(x, 0xFFFF, lo, x);  // vmaxps returns x when x is NaN
  const __m512 t = _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n =
      _mm512_mask_roundscale_ps(t, 0xFFFF, t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return reinterpret_cast<Simd<16>::f>(_mm512_maskz_scalef_ps(live, p, n));
}
#endif

// The 8-lane spellings the backward kernels (grad_block.h) use.
inline v8f load8(const float* p) { return loadv<v8f>(p); }
inline void store8(float* p, v8f v) { storev(p, v); }
inline v8f splat8(float x) { return splat<v8f>(x); }
inline float hsum8(v8f v) { return hsum(v); }
inline v8f exp8(v8f x) { return vexp(x); }

SPARSEATTN_ISA_END
