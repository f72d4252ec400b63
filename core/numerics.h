// The tolerance table (contract §4). docs/numerics.md explains every row; tests, benchmarks
// and `sparseattn check` use these values and nothing looser.
#pragma once

namespace sparseattn {

struct Tolerance {
  double atol;
  double rtol;
};

// float64 implementations vs the float64 oracle: only summation order differs.
inline constexpr Tolerance kTolFloat64{1e-12, 1e-12};
// float32 arithmetic (inputs rounded to float32) vs the float64 oracle on the
// unrounded inputs.
inline constexpr Tolerance kTolFloat32{2e-5, 2e-4};
// float16 inputs, float32 accumulation, P rounded to float16 for P·V; compared with the
// oracle evaluated on the same float16-rounded inputs.
inline constexpr Tolerance kTolFloat16{2e-3, 2e-3};
// bfloat16 likewise (8 bits of mantissa instead of 11).
inline constexpr Tolerance kTolBfloat16{1.6e-2, 1.6e-2};

}  // namespace sparseattn
