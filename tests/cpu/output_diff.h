// How two runs of one kernel differ element by element: for the tests that prove two code
// paths really ran (two SIMD builds, two bf16 engines) — they must not be bit-identical —
// and that they differ only in summation order (a small largest difference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/tensor.h"

namespace sparseattn::testing_cpu {

struct OutputDiff {
  size_t differ = 0;   // elements whose bits differ
  double worst = 0.0;  // the largest absolute difference
};

inline OutputDiff output_diff(const Tensor<float>& a, const Tensor<float>& b) {
  OutputDiff d;
  const size_t n = std::min(a.data.size(), b.data.size());
  for (size_t i = 0; i < n; ++i) {
    d.differ += a.data[i] != b.data[i];
    d.worst = std::max(d.worst, std::fabs(static_cast<double>(a.data[i]) - b.data[i]));
  }
  return d;
}

}  // namespace sparseattn::testing_cpu
