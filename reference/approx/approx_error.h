// How far an approximation's output is from the oracle's — the numbers
// docs/approximations.md tabulates and tests/approx/ compares (never a pass/fail bound).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/tensor.h"

namespace sparseattn {

struct ApproxError {
  double max_abs = 0.0;       // max over elements of |o - o_ref|
  double mean_row_rel = 0.0;  // mean over rows i of ‖o_i - ref_i‖₂ / ‖ref_i‖₂
};

// o, ref: the same shape [..., rows, width] (width = last dimension). Rows whose
// reference is exactly 0 count with relative error 0 if o is 0 there too, else 1.
// Throws InvalidArgument("o") on a shape mismatch.
inline ApproxError approx_error(const Tensor<double>& o, const Tensor<double>& ref) {
  require(o.shape == ref.shape && !o.shape.empty(), "o", shape_text(o.shape),
          "must have the oracle's shape " + shape_text(ref.shape));
  const int64_t width = o.shape.back();
  const int64_t rows = width == 0 ? 0 : o.numel() / width;
  ApproxError e;
  for (int64_t r = 0; r < rows; ++r) {
    double diff2 = 0.0, ref2 = 0.0;
    for (int64_t c = 0; c < width; ++c) {
      const double d = o.data[r * width + c] - ref.data[r * width + c];
      e.max_abs = std::max(e.max_abs, std::abs(d));
      diff2 += d * d;
      ref2 += ref.data[r * width + c] * ref.data[r * width + c];
    }
    e.mean_row_rel += ref2 > 0.0 ? std::sqrt(diff2 / ref2) : (diff2 > 0.0 ? 1.0 : 0.0);
  }
  if (rows > 0) e.mean_row_rel /= static_cast<double>(rows);
  return e;
}

}  // namespace sparseattn
