// How two runs of one kernel differ element by element: for the tests that prove two code
// paths really ran (two SIMD builds, two bf16 engines) — they must not be bit-identical —
// and that they differ only in summation order (a small largest difference). And the one
// problem those tests run: dense, 2 heads of 300 queries at head_dim 64, long enough rows
// that two summation orders round some output differently.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/seeded_inputs.h"
#include "core/tensor.h"
#include "pattern/pattern.h"
#include "registry/registry.h"
#include "tests/reference/grid.h"

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

inline Problem two_paths_problem() {
  // Static: a Problem refers to its pattern (registry.h), which must outlive it.
  static const Pattern pattern = materialize(
      testing_grid::token(PatternKind::dense, 0, 1, false, 64), {1, 2, 300, 300});
  return make_problem(testing_inputs::random_tensor({1, 2, 300, 64}, 5),
                      testing_inputs::random_tensor({1, 2, 300, 64}, 6),
                      testing_inputs::random_tensor({1, 2, 300, 64}, 7), pattern, nullptr);
}

}  // namespace sparseattn::testing_cpu
