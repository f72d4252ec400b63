// Standard normal numbers from the project's counter-based PRNG (pattern/prng.h)
// by Box–Muller (Box & Muller 1958) — no standard-library distribution, whose algorithm
// differs between libraries (draws must reproduce). Performer's random features and the Gaussian
// inputs of the approximation measurements both draw here.
#pragma once

#include <cmath>
#include <cstdint>

#include "pattern/prng.h"

namespace sparseattn {

// Normal number `t` (0, 1, 2, ...) of the stream `key`: a pure function of (key, t).
// Two uniforms per normal (only the cosine branch is used, so no state is kept); u1 is
// in (0, 1], so log(u1) is finite.
inline double standard_normal(uint64_t key, uint64_t t) {
  constexpr double kPi = 3.14159265358979323846;
  const double u1 = (static_cast<double>(prng_bits(key, 2 * t) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(prng_bits(key, 2 * t + 1) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}

}  // namespace sparseattn
