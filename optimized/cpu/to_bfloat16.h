// The rounding of a bf16 CPU entry's inputs (contract §4.3): q32, k32, v32 rounded to
// bfloat16 inside the run, one definition for every bf16 entry (optimized/cpu/entries.cpp,
// selected_entries.cpp), so that all of them round, and refuse, alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/bfloat16.h"
#include "core/error.h"
#include "core/tensor.h"

namespace sparseattn::entry {

// x rounded to bfloat16, round to nearest even (core/bfloat16.h), on the OpenMP team: the
// bit patterns, x's shape row-major. `name` is the tensor ("q", "k", "v"), `kernel` the
// entry. Throws InvalidArgument(name) when an element rounds to ±inf: it lies between
// bfloat16's largest finite value (3.3895e38) and float32's, where no bf16 kernel can hold
// it. (±inf and NaN stay themselves; the float32 guard refuses them before this.)
inline std::vector<uint16_t> to_bfloat16(const Tensor<float>& x, const char* name,
                                         const char* kernel) {
  const int64_t n = x.numel();
  std::vector<uint16_t> h(static_cast<size_t>(n));
  int inf = 0;
#pragma omp parallel for schedule(static) reduction(| : inf)
  for (int64_t i = 0; i < n; ++i) {
    h[i] = float_to_bfloat16(x.data[i]);
    inf |= (h[i] & 0x7FFF) == 0x7F80;
  }
  for (int64_t i = 0; inf && i < n; ++i)
    if ((h[i] & 0x7FFF) == 0x7F80 && std::isfinite(x.data[i]))
      throw InvalidArgument(name, "a tensor with |x| = " + to_text(std::fabs(x.data[i])),
                            "|x| = " + to_text(std::fabs(x.data[i])) +
                                " is beyond bfloat16's range (3.3895e38): the bf16 kernel " +
                                kernel + " cannot hold it; use its float32 variant");
  return h;
}

}  // namespace sparseattn::entry
