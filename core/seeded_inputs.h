// Seeded inputs for the tests of contract §2–§4, the benchmarks and `sparseattn sweep`
// (one generator, so a benchmark's inputs can be rebuilt in a test). Written here, on
// purpose without <random>: a standard-library distribution's algorithm differs between
// libraries, so a failing case would not reproduce elsewhere. xorshift64* (Vigna 2016),
// one stream per seed. Header-only, below every layer that draws inputs.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace sparseattn::testing_inputs {

class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed * 2 + 0x2545F4914F6CDD1Dull) {}

  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [lo, hi): the top 53 bits as a double in [0, 1).
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }
  // Uniform integer in [0, bound); the modulo bias (< bound / 2^64) is irrelevant here.
  int64_t below(int64_t bound) { return static_cast<int64_t>(next() % static_cast<uint64_t>(bound)); }

 private:
  uint64_t state_;
};

// FNV-1a of a string: a portable seed from a test's name (std::hash differs by library).
inline uint64_t seed_of(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

// A tensor of `shape` with entries uniform in [lo, hi).
inline Tensor<double> random_tensor(const Shape& shape, uint64_t seed, double lo = -1.0,
                                    double hi = 1.0) {
  Tensor<double> t(shape, 0.0);
  TestRng rng(seed);
  for (double& x : t.data) x = rng.uniform(lo, hi);
  return t;
}

}  // namespace sparseattn::testing_inputs
