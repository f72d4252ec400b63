// Checks contract §7 (backward pass): every CPU backward kernel against the gradient oracle.
// Every backward implementation of the registry (registry/backward_kernels.def) against
// the float64 gradient oracle b1_dense_masked_grad at the tolerance it declares, over the
// CPU grid (tests/cpu/cpu_cases.h: every pattern kind, seq_len_q != seq_len_k, head_dim !=
// head_dim_v, key padding with fully padded batch elements, fully masked rows, ragged
// tiles) plus seq_len 1025 with block 64; exact zeros where the gradient is structurally
// zero; bit-identical CPU results with 1, 2 and 3 OpenMP threads. Each kernel consumes the
// saved o and lse of the forward kernel it names, as it would in training.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "core/check.h"
#include "core/error.h"
#include "optimized/cpu/grad_kernels.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"
#include "tests/cpu/cpu_cases.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;
using testing_inputs::random_tensor;

struct Inputs {
  Tensor<double> q, k, v, dout;
};
Inputs inputs_for(const Case& c, uint64_t seed) {
  const PatternSizes& z = c.sizes;
  return {random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2),
          random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim_v}, seed + 3)};
}

// The largest share of the tolerance budget used per kernel over the whole grid, printed
// at the end (the figures quoted in docs/backward.md).
std::map<std::string, double>& worst_budget() {
  static std::map<std::string, double> m;
  return m;
}

// Rows and keys whose exact zeros were checked, over the whole run (printed at the end, so
// a grid that silently stopped containing them would show 0).
std::pair<int64_t, int64_t>& zero_counts() {
  static std::pair<int64_t, int64_t> n{0, 0};
  return n;
}

// Exact zeros: dq of a row the pattern leaves empty, dk and dv of a key no row attends.
template <class T>
void expect_structural_zeros(const Pattern& p, int64_t B, const Tensor<T>& dq,
                             const Tensor<T>& dk, const Tensor<T>& dv) {
  const int64_t H = p.sizes.num_heads, Lq = p.sizes.seq_len_q, Lk = p.sizes.seq_len_k;
  const int64_t D = dq.shape[3], Dv = dv.shape[3];
  std::vector<uint8_t> row_used(B * H * Lq, 0), key_used(B * H * Lk, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lk; ++j)
          if (p.allowed(b, h, i, j)) {
            row_used[(b * H + h) * Lq + i] = 1;
            key_used[(b * H + h) * Lk + j] = 1;
          }
  int64_t zero_rows = 0, zero_keys = 0;
  for (int64_t r = 0; r < B * H * Lq; ++r) {
    if (row_used[r]) continue;
    ++zero_rows;
    for (int64_t d = 0; d < D; ++d) {
      ASSERT_EQ(dq.data[r * D + d], T(0)) << "dq row " << r;
    }
  }
  for (int64_t r = 0; r < B * H * Lk; ++r) {
    if (key_used[r]) continue;
    ++zero_keys;
    for (int64_t d = 0; d < D; ++d) {
      ASSERT_EQ(dk.data[r * D + d], T(0)) << "dk row " << r;
    }
    for (int64_t d = 0; d < Dv; ++d) {
      ASSERT_EQ(dv.data[r * Dv + d], T(0)) << "dv row " << r;
    }
  }
  zero_counts().first += zero_rows;
  zero_counts().second += zero_keys;
}

void check_every_kernel(const Case& c, const Inputs& in) {
  const Pattern pattern = materialize(c.spec, c.sizes);
  const double* scale = std::isnan(c.scale) ? nullptr : &c.scale;
  const GradientResult oracle = b1_dense_masked_grad(in.q, in.k, in.v, in.dout, pattern, scale);
  const Problem problem = make_problem(in.q, in.k, in.v, pattern, scale);
  int served = 0;
  for (const GradKernel& kernel : grad_kernels()) {
    if (kernel.target == Target::cuda) continue;  // tests/cuda runs those on a device
    SCOPED_TRACE(kernel.name);
    if (!kernel.serves(pattern)) continue;
    ++served;
    GradProblem gp = make_grad_problem(problem, in.dout);
    save_forward(kernel, gp);
    GradOutput out;
    kernel.run(gp, out);
    const Tolerance tol{kernel.atol, kernel.rtol};
    const bool f32 = kernel.dtype == DType::float32;
    const CheckReport rq = f32 ? check_close(out.dq32, oracle.dq, tol) : check_close(out.dq, oracle.dq, tol);
    const CheckReport rk = f32 ? check_close(out.dk32, oracle.dk, tol) : check_close(out.dk, oracle.dk, tol);
    const CheckReport rv = f32 ? check_close(out.dv32, oracle.dv, tol) : check_close(out.dv, oracle.dv, tol);
    EXPECT_TRUE(rq.pass) << report_json(rq, "dq", tol);
    EXPECT_TRUE(rk.pass) << report_json(rk, "dk", tol);
    EXPECT_TRUE(rv.pass) << report_json(rv, "dv", tol);
    double& w = worst_budget()[kernel.name];
    w = std::max({w, rq.budget_used, rk.budget_used, rv.budget_used});
    if (f32) expect_structural_zeros(pattern, c.sizes.batch, out.dq32, out.dk32, out.dv32);
    else expect_structural_zeros(pattern, c.sizes.batch, out.dq, out.dk, out.dv);
  }
  EXPECT_GE(served, 5);  // b1, b2, b3, cpu_kb01 and cpu_kb02 serve every pattern
}

class BackwardVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardVsOracle, EveryBackwardKernelMatchesB1AtItsTolerance) {
  const Case& c = GetParam();
  check_every_kernel(c, inputs_for(c, testing_inputs::seed_of(c.name) + 101));
}

INSTANTIATE_TEST_SUITE_P(Grid, BackwardVsOracle, ::testing::ValuesIn(testing_cpu::cpu_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// seq_len 1025 with block 64 (one-token last block) and with a 64-tile token pattern, key
// padding: the shapes where public block-sparse backward passes have returned NaN.
TEST(BackwardLong, Seq1025Block64) {
  const Case bb = testing_grid::make_case(testing_grid::bigbird(64, 2, 7), {2, 1, 1025, 1025, 32, 16}, true);
  check_every_kernel(bb, inputs_for(bb, 5));
  const Case w = testing_grid::make_case(testing_grid::token(PatternKind::window, 70, 1, true, 64),
                                         {1, 2, 1025, 1025, 24, 40});
  check_every_kernel(w, inputs_for(w, 6));
}

TEST(BackwardRegistry, EntriesNameTheirForwardAndTheOracle) {
  for (const GradKernel& k : grad_kernels()) {
    SCOPED_TRACE(k.name);
    EXPECT_STREQ(k.reference, "b1_dense_masked_grad");
    EXPECT_NO_THROW(find_kernel(k.forward));
    // The last entry naming a forward is the one `attend --dout --impl <forward>` runs.
    const GradKernel* chosen = grad_kernel_for_forward(k.forward);
    ASSERT_NE(chosen, nullptr);
    EXPECT_STREQ(chosen->forward, k.forward);
    EXPECT_GE(chosen, &k);
    const Tolerance want = k.dtype == DType::float64    ? kTolFloat64
                           : k.dtype == DType::bfloat16 ? kTolBfloat16
                                                        : kTolFloat32;
    if (k.dtype != DType::float16) {
      EXPECT_EQ(k.atol, want.atol);
      EXPECT_EQ(k.rtol, want.rtol);
    }
    // A bf16 backward consumes its bf16 forward's o and lse, the same dtype.
    EXPECT_EQ(find_kernel(k.forward).dtype, k.dtype);
  }
  EXPECT_STREQ(grad_kernel_for_forward("cpu_k08_selected_gather_bf16")->name,
               "cpu_kb03_selected_gather_grad_bf16");
  EXPECT_EQ(grad_kernel_for_forward("cpu_k02_window_band"), nullptr);
  EXPECT_STREQ(grad_kernel_for_forward("cpu_k06_generic_tiles")->name, "cpu_kb02_generic_dq_lanes_grad");
  EXPECT_STREQ(grad_kernel_for_forward("a1_dense_masked")->name, "b1_dense_masked_grad");
}

TEST(BackwardInput, BadDoutIsRefusedNamingDout) {
  const Pattern pattern = materialize(testing_grid::token(PatternKind::dense, 0, 1, false, 64), {1, 1, 4, 4});
  const Problem problem = make_problem(random_tensor({1, 1, 4, 3}, 1), random_tensor({1, 1, 4, 3}, 2),
                                       random_tensor({1, 1, 4, 2}, 3), pattern, nullptr);
  try {
    make_grad_problem(problem, random_tensor({1, 1, 4, 3}, 4));
    FAIL() << "wrong shape accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dout shape");
  }
  Tensor<double> nan_dout = random_tensor({4, 2}, 5);  // rank 2: leading 1s omitted
  EXPECT_NO_THROW(make_grad_problem(problem, nan_dout));
  nan_dout.data[5] = NAN;
  try {
    make_grad_problem(problem, nan_dout);
    FAIL() << "NaN accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dout[0,0,2,1]");
  }
}

// contract §4: bit-identical CPU results whatever the number of OpenMP threads.
// A selected pattern (contract §3.16) every CPU backward serves: one list for the batch,
// repeats counted once; kb03 runs on it alone.
PatternSpec selected_spec() {
  PatternSpec s;
  s.kind = PatternKind::selected;
  Tensor<int64_t> t({1, 1, 333, 24});
  for (size_t e = 0; e < t.data.size(); ++e)
    t.data[e] = e % 7 == 3 ? -1 : static_cast<int64_t>((e * 2654435761u) % 333);
  s.kv_indices = std::move(t);
  return s;
}

TEST(BackwardDeterminism, BitIdenticalWithOneTwoAndThreeThreads) {
  const int saved = omp_get_max_threads();
  for (const GradKernel& kernel : grad_kernels()) {
    if (kernel.target != Target::cpu) continue;
    SCOPED_TRACE(kernel.name);
    for (PatternSpec spec : {testing_grid::token(PatternKind::random, 8, 1, false, 16, {7}, 5, 2),
                             testing_grid::bigbird(32, 2, 3),
                             testing_grid::token(PatternKind::dense, 0, 1, true, 128),
                             selected_spec()}) {
      spec.key_padding_mask = testing_grid::key_padding(2, 333, 5);
      const Pattern pattern = materialize(spec, {2, 2, 333, 333});
      if (!kernel.serves(pattern)) continue;  // kb03: selected only (below)
      const Problem problem = make_problem(random_tensor({2, 2, 333, 64}, 11), random_tensor({2, 2, 333, 64}, 12),
                                           random_tensor({2, 2, 333, 48}, 13), pattern, nullptr);
      GradProblem gp = make_grad_problem(problem, random_tensor({2, 2, 333, 48}, 14));
      save_forward(kernel, gp);
      omp_set_num_threads(1);
      GradOutput one;
      kernel.run(gp, one);
      for (int threads : {2, 3}) {
        omp_set_num_threads(threads);
        GradOutput many;
        kernel.run(gp, many);
        for (auto [a, b] : {std::pair{&one.dq32, &many.dq32}, {&one.dk32, &many.dk32}, {&one.dv32, &many.dv32}}) {
          ASSERT_EQ(a->data.size(), b->data.size());
          EXPECT_EQ(0, std::memcmp(a->ptr(), b->ptr(), a->data.size() * sizeof(float)))
              << threads << " threads, " << describe(spec);
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

// kb02 processes (batch, head) pairs in waves bounded by a memory budget; the result must
// not depend on the budget (one pair per wave vs all pairs at once).
TEST(BackwardKb02, ResultDoesNotDependOnTheLaneBudget) {
  PatternSpec spec = testing_grid::token(PatternKind::longformer, 9, 1, false, 32, {0, 77});
  spec.key_padding_mask = testing_grid::key_padding(2, 150, 8);
  const Pattern pattern = materialize(spec, {2, 3, 150, 150});
  const Problem problem = make_problem(random_tensor({2, 3, 150, 24}, 21), random_tensor({2, 3, 150, 24}, 22),
                                       random_tensor({2, 3, 150, 40}, 23), pattern, nullptr);
  const GradKernel& kernel = find_grad_kernel("cpu_kb02_generic_dq_lanes_grad");
  GradProblem gp = make_grad_problem(problem, random_tensor({2, 3, 150, 40}, 24));
  save_forward(kernel, gp);
  GradOutput all;
  kernel.run(gp, all);
  Tensor<float> dq(all.dq32.shape), dk(all.dk32.shape), dv(all.dv32.shape);
  cpu::GradInputs in;
  in.q = problem.q32.ptr();
  in.k = problem.k32.ptr();
  in.v = problem.v32.ptr();
  in.o = gp.o32.ptr();
  in.lse = gp.lse32.ptr();
  in.dout = gp.dout32.ptr();
  in.shape = problem.shape;
  in.pattern = &pattern;
  in.scale = static_cast<float>(problem.scale);
  cpu::kb02_generic_dq_lanes_grad(in, {dq.ptr(), dk.ptr(), dv.ptr()}, /*lane_budget_bytes=*/1);
  EXPECT_EQ(0, std::memcmp(dq.ptr(), all.dq32.ptr(), dq.data.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(dk.ptr(), all.dk32.ptr(), dk.data.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(dv.ptr(), all.dv32.ptr(), dv.data.size() * sizeof(float)));
  const GradientResult oracle = b1_dense_masked_grad(problem.q, problem.k, problem.v, gp.dout, pattern, nullptr);
  EXPECT_TRUE(check_close(dq, oracle.dq, kTolFloat32).pass);
}

// Printed when the binary ends (a global environment, not a test: it asserts nothing):
// how much of its tolerance each kernel used at worst over the grid cases run in this process.
class BudgetSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (worst_budget().empty()) return;  // one case per process (ctest): nothing to sum up
    std::printf("[ zeros ] %lld empty rows (dq == 0) and %lld unattended keys (dk == dv == 0) checked\n",
                static_cast<long long>(zero_counts().first),
                static_cast<long long>(zero_counts().second));
    for (const auto& [name, w] : worst_budget())
      std::printf("[ budget ] %s: worst |x - ref| / (atol + rtol |ref|) = %.3g\n", name.c_str(), w);
  }
};
[[maybe_unused]] ::testing::Environment* const kBudgetSummary =
    ::testing::AddGlobalTestEnvironment(new BudgetSummary);

}  // namespace
}  // namespace sparseattn
