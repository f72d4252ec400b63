// bfloat16 storage and its rounding (contract §4.3): the one definition the bf16 CPU
// entries, their tests and the benchmark's validation share.
//
// bfloat16 is the top half of an IEEE-754 float32: 1 sign bit, the same 8 exponent bits,
// 7 stored mantissa bits (8 significant bits, unit roundoff 2^-8). Stored here as the raw
// uint16_t bit pattern, so no compiler support for a __bf16 type is needed.
//
// float32 -> bfloat16 rounds to nearest, ties to even, on the bit pattern: add 0x7FFF plus
// the lowest kept bit, keep the top 16 bits. This is exact IEEE rounding for every finite
// float, denormals included (bfloat16 has float32's denormals, with 7 mantissa bits), and
// it overflows to ±inf exactly where IEEE rounding does (|x| >= 0x1.FFp127 rounds up to
// the next binade). NaN is the one special case: the addition could carry a NaN's
// mantissa into the exponent (giving inf) or into the sign, so a NaN keeps its sign and
// top payload bits and has its quiet bit set instead (0x7FC0 for the canonical NaN).
// ±inf and ±0 map to themselves. This is what the hardware conversions do
// (vcvtneps2bf16, CUDA's __float2bfloat16_rn), except that AVX512-BF16 flushes denormals
// to zero (see optimized/cpu/flash_tile_bf16.h, which uses it only for probabilities P).
//
// A float64 value is rounded to float32 first, then to bfloat16 (what the registry does:
// Problem::q32 is float32(q), the bf16 entries round q32): bfloat16(float32(x)).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/tensor.h"

namespace sparseattn {

// Nearest bfloat16 (ties to even) of x, as its bit pattern.
inline uint16_t float_to_bfloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: quiet it, keep sign and top payload
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The float32 value of a bfloat16 bit pattern (exact: bfloat16 is a subset of float32).
inline float bfloat16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// x rounded to bfloat16 and back: bfloat16(float32(x)) as a double (the oracle's inputs
// for a bf16 kernel, docs/numerics.md).
inline double round_to_bfloat16(double x) {
  return bfloat16_to_float(float_to_bfloat16(static_cast<float>(x)));
}

// Every element rounded so: the inputs of the oracle a bf16 kernel is compared with.
inline Tensor<double> round_to_bfloat16(const Tensor<double>& x) {
  Tensor<double> y = x;
  for (double& e : y.data) e = round_to_bfloat16(e);
  return y;
}

// The largest finite bfloat16, 0x7F7F = (2 - 2^-7) · 2^127 ≈ 3.3895e38. A float32 at or above
// 0x1.FFp127 ≈ 3.39618e38 in magnitude (the tie included) rounds to ±inf.
inline constexpr double kBfloat16Max = 3.3895313892515355e38;

}  // namespace sparseattn
