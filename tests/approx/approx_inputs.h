// Serves the tests of contract §4.8 (approximations).
// Inputs of the approximation tests: Gaussian q/k/v (the kind case for both methods)
// drawn by reference/approx/gaussian.h, and the dense pattern they serve.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "reference/approx/gaussian.h"
#include "pattern/pattern.h"
#include "pattern/prng.h"

namespace sparseattn::testing_approx {

// A tensor of `shape` with independent N(0, sigma²) entries, keyed by `seed`.
inline Tensor<double> gaussian_tensor(const Shape& shape, uint64_t seed, double sigma = 1.0) {
  Tensor<double> t(shape, 0.0);
  const uint64_t key = prng_stream_key(seed, 0, 0);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data[i] = sigma * standard_normal(key, static_cast<uint64_t>(i));
  return t;
}

inline Pattern dense(int64_t num_heads, int64_t seq_len_q, int64_t seq_len_k) {
  return materialize(PatternSpec{}, {1, num_heads, seq_len_q, seq_len_k});
}

// The argument named by an InvalidArgument thrown by f, or "" if none was thrown.
template <class F>
std::string argument_of(F f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.argument();
  }
  return "";
}

}  // namespace sparseattn::testing_approx
