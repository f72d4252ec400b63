// Su Jianlin's hierarchical position decomposition; see position_extension.h.
#include "realdata/position_extension.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace sparseattn::realdata {

Tensor<double> extend_positions(const Tensor<double>& table, int64_t length, double alpha) {
  require(table.rank() == 2, "table", shape_text(table.shape),
          "must be rank 2: [num_positions, dim]");
  const int64_t n = table.dim(0);
  const int64_t dim = table.dim(1);
  require(n >= 1 && dim >= 1, "table", shape_text(table.shape),
          "num_positions and dim must be >= 1");
  // alpha = 0 gives q_{(i,j)} = u_j = p_j for every i (all "tens digits" collapse);
  // alpha = 1 divides by zero; alpha = 0.5 makes q symmetric in (i, j).
  require(std::isfinite(alpha) && alpha > 0.0 && alpha < 1.0 && alpha != 0.5, "alpha", alpha,
          "must be in (0, 1) and != 0.5 (0.5 maps positions (i, j) and (j, i) to the same "
          "vector); Su Jianlin uses 0.4");
  // n² computed without overflow: n <= 2^31 keeps n*n within int64.
  const bool fits = n <= (int64_t{1} << 31) && length <= n * n;
  require(length >= 1 && fits, "length", length,
          "must be in [1, n²] = [1, " + std::to_string(n) + "²] for a table of n = " +
              std::to_string(n) + " positions (two base-n digits)");

  // u_i = (p_i − α·p_1) / (1 − α), for every i a position may need (i <= ceil(length/n)).
  const int64_t num_i = (length + n - 1) / n;
  Tensor<double> u({num_i, dim});
  const double* p = table.ptr();
  for (int64_t i = 0; i < num_i; ++i)
    for (int64_t c = 0; c < dim; ++c)
      u.data[i * dim + c] = (p[i * dim + c] - alpha * p[c]) / (1.0 - alpha);

  Tensor<double> out({length, dim});
  for (int64_t m = 0; m < length; ++m) {
    const int64_t i = m / n;  // 0-based "tens digit"
    const int64_t j = m % n;  // 0-based "units digit"
    double* row = out.ptr() + m * dim;
    if (i == 0) {
      for (int64_t c = 0; c < dim; ++c) row[c] = p[j * dim + c];
      continue;
    }
    // u_j for j >= num_i is computed on the fly (u holds only the tens digits).
    for (int64_t c = 0; c < dim; ++c) {
      const double u_j = (p[j * dim + c] - alpha * p[c]) / (1.0 - alpha);
      row[c] = alpha * u.data[i * dim + c] + (1.0 - alpha) * u_j;
    }
  }
  return out;
}

}  // namespace sparseattn::realdata
