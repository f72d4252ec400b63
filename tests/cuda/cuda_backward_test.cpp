// Checks contract §7 (backward pass): every CUDA backward kernel against the gradient oracle.
// Every CUDA backward kernel of the registry (registry/cuda_backward_kernels.def) against
// the float64 gradient oracle b1_dense_masked_grad, over the awkward-shape grid of
// tests/cpu/cpu_cases.h plus seq_len 1025 with block 64, at the tolerance it declares;
// exact zeros where the gradient is structurally zero; two runs bit-identical. Each kernel
// consumes the saved o and lse of the forward kernel it names. The modern grid (grouped kv
// heads, softcap, ALiBi, sinks; contract §7.7) with dsinks, for the entries listing kModern.
//
// Without a device every test here GTEST_SKIP()s with "no CUDA device" (CTest reports them
// as skipped, never passed), except the registry test, which runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/numerics.h"
#include "optimized/cuda/device_runtime.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"
#include "tests/cpu/cpu_cases.h"
#include "tests/reference/modern_grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;
using testing_inputs::random_tensor;

std::vector<const GradKernel*> cuda_grad_kernels() {
  std::vector<const GradKernel*> list;
  for (const GradKernel& k : grad_kernels())
    if (k.target == Target::cuda) list.push_back(&k);
  return list;
}

TEST(CudaBackwardRegistry, EveryEntryIsFloat32AgainstTheGradientOracle) {
  const std::vector<const GradKernel*> list = cuda_grad_kernels();
  ASSERT_GE(list.size(), 1u);
  for (const GradKernel* k : list) {
    SCOPED_TRACE(k->name);
    EXPECT_EQ(k->dtype, DType::float32);
    EXPECT_STREQ(k->reference, "b1_dense_masked_grad");
    EXPECT_EQ(k->atol, kTolFloat32.atol);
    EXPECT_EQ(k->rtol, kTolFloat32.rtol);
    EXPECT_EQ(find_kernel(k->forward).target, Target::cuda);
  }
}

void check_case(const Case& c) {
  const Pattern pattern = materialize(c.spec, c.sizes);
  const uint64_t seed = testing_inputs::seed_of(c.name) + 303;
  const PatternSizes& z = c.sizes;
  const Tensor<double> q = random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed);
  const Tensor<double> k = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1);
  const Tensor<double> v = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2);
  const Tensor<double> dout = random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim_v}, seed + 3);
  const double* scale = std::isnan(c.scale) ? nullptr : &c.scale;
  const GradientResult oracle = b1_dense_masked_grad(q, k, v, dout, pattern, scale);
  const Problem problem = make_problem(q, k, v, pattern, scale);

  // Structural zeros from the predicate alone.
  const int64_t B = z.batch, H = z.num_heads, Lq = z.seq_len_q, Lk = z.seq_len_k;
  std::vector<uint8_t> row_used(B * H * Lq, 0), key_used(B * H * Lk, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lk; ++j)
          if (pattern.allowed(b, h, i, j)) {
            row_used[(b * H + h) * Lq + i] = 1;
            key_used[(b * H + h) * Lk + j] = 1;
          }

  for (const GradKernel* kernel : cuda_grad_kernels()) {
    SCOPED_TRACE(kernel->name);
    if (!kernel->serves(pattern)) continue;
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(*kernel, gp);
    GradOutput out, again;
    kernel->run(gp, out);
    kernel->run(gp, again);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const CheckReport rq = check_close(out.dq32, oracle.dq, tol);
    const CheckReport rk = check_close(out.dk32, oracle.dk, tol);
    const CheckReport rv = check_close(out.dv32, oracle.dv, tol);
    EXPECT_TRUE(rq.pass) << report_json(rq, "dq", tol);
    EXPECT_TRUE(rk.pass) << report_json(rk, "dk", tol);
    EXPECT_TRUE(rv.pass) << report_json(rv, "dv", tol);
    EXPECT_EQ(0, std::memcmp(out.dq32.ptr(), again.dq32.ptr(), out.dq32.data.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(out.dk32.ptr(), again.dk32.ptr(), out.dk32.data.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(out.dv32.ptr(), again.dv32.ptr(), out.dv32.data.size() * sizeof(float)));
    const int64_t D = c.head_dim, Dv = c.head_dim_v;
    for (int64_t r = 0; r < B * H * Lq; ++r) {
      if (row_used[r]) continue;
      for (int64_t d = 0; d < D; ++d) {
        ASSERT_EQ(out.dq32.data[r * D + d], 0.0f) << "dq row " << r;
      }
    }
    for (int64_t r = 0; r < B * H * Lk; ++r) {
      if (key_used[r]) continue;
      for (int64_t d = 0; d < D; ++d) {
        ASSERT_EQ(out.dk32.data[r * D + d], 0.0f) << "dk row " << r;
      }
      for (int64_t d = 0; d < Dv; ++d) {
        ASSERT_EQ(out.dv32.data[r * Dv + d], 0.0f) << "dv row " << r;
      }
    }
  }
}

class CudaBackwardVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(CudaBackwardVsOracle, EveryCudaBackwardMatchesB1AtKTolFloat32) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  check_case(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Grid, CudaBackwardVsOracle, ::testing::ValuesIn(testing_cpu::cpu_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(CudaBackwardLong, Seq1025Block64WithKeyPadding) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  check_case(testing_grid::make_case(testing_grid::bigbird(64, 2, 7), {2, 2, 1025, 1025, 64, 32}, true));
}

// contract §7.7 on the device: every CUDA backward listing kModern against b1 with the same
// modifiers on the modern grid (tests/reference/modern_grid.h: g ∈ {1, 2, 4, 8}, H_kv = 1,
// L_q ≠ L_k, key padding, real rows without keys, every modifier alone and together): dq,
// dk, dv and dsinks at the kernel's stated tolerance, two runs bit-identical.
class CudaBackwardModern : public ::testing::TestWithParam<testing_modern::ModernCase> {};

TEST_P(CudaBackwardModern, EveryModernCudaBackwardMatchesB1) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const testing_modern::ModernCase& c = GetParam();
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  const ScoreMods mods = testing_modern::mods_of(c);
  const double* scale = std::isnan(c.base.scale) ? nullptr : &c.base.scale;
  const PatternSizes& z = c.base.sizes;
  const Tensor<double> dout = random_tensor({z.batch, z.num_heads, z.seq_len_q, c.base.head_dim_v},
                                            testing_inputs::seed_of(c.name) + 3);
  const GradientResult oracle = b1_dense_masked_grad(in.q, in.k, in.v, dout, pattern, scale, mods);
  const Problem problem = make_problem(in.q, in.k, in.v, pattern, scale, mods);
  int ran = 0;
  for (const GradKernel* kernel : cuda_grad_kernels()) {
    SCOPED_TRACE(kernel->name);
    if (!kernel->serves(pattern)) continue;
    ASSERT_EQ(kernel->features, kModern);
    ++ran;
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(*kernel, gp);
    GradOutput out, again;
    kernel->run(gp, out);
    kernel->run(gp, again);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const CheckReport rq = check_close(out.dq32, oracle.dq, tol);
    const CheckReport rk = check_close(out.dk32, oracle.dk, tol);
    const CheckReport rv = check_close(out.dv32, oracle.dv, tol);
    EXPECT_TRUE(rq.pass) << report_json(rq, "dq", tol);
    EXPECT_TRUE(rk.pass) << report_json(rk, "dk", tol);
    EXPECT_TRUE(rv.pass) << report_json(rv, "dv", tol);
    if (mods.has_sinks()) {
      const CheckReport rs = check_close(out.dsinks, oracle.dsinks, tol);
      EXPECT_TRUE(rs.pass) << report_json(rs, "dsinks", tol);
    }
    EXPECT_EQ(0, std::memcmp(out.dk32.ptr(), again.dk32.ptr(), out.dk32.data.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(out.dq32.ptr(), again.dq32.ptr(), out.dq32.data.size() * sizeof(float)));
  }
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(Modern, CudaBackwardModern, ::testing::ValuesIn(testing_modern::modern_cases()),
                         [](const ::testing::TestParamInfo<testing_modern::ModernCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace sparseattn
