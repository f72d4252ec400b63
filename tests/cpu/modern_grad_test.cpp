// Checks contract §7.7 (the gradients of grouped-query heads, softcap, ALiBi and sinks,
// §2.7–§2.9) on the optimized CPU backward kernels: every float32 backward entry (kb01,
// kb02) lists kModern and is within exactly the tolerance its entry states (kTolFloat32)
// of the float64 gradient oracle b1_dense_masked_grad on dq, dk, dv and dsinks, over the
// modern grid (tests/reference/modern_grid.h: g ∈ {1, 2, 4, 8}, H_kv = 1, L_q ≠ L_k, causal,
// key padding with padded queries, real rows without keys, dense/window/longformer/bigbird/
// explicit/per-head) plus the (left, right) window, chunked and neighborhood kinds with
// parameters beyond the sequence; each consumes the saved o and lse of its forward kernel
// (cpu_k06_generic_tiles, also kModern) as in training. Then dsinks by hand on rows without
// keys and padded queries, and bit-identical results (dsinks too) for 1 and 3 threads.
// The planted mistakes (dropping the softcap's 1 − tanh², one query head per kv head instead
// of the group sum, dσ's sign) were run against this file: docs/robustness.md, "Backward
// kernels with modern attention".
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"
#include "tests/reference/modern_grid.h"

namespace sparseattn {
namespace {

using testing_modern::ModernCase;

// The float32 CPU backward entries that serve every pattern; every one must list the modern
// features. (kb03 and its bf16 twin serve `selected` only and read grouped heads, not
// softcap, ALiBi or sinks: tests/cpu/cpu_selected_test.cpp.)
std::vector<const GradKernel*> cpu_grad_kernels() {
  std::vector<const GradKernel*> list;
  for (const GradKernel& k : grad_kernels())
    if (k.target == Target::cpu && k.dtype == DType::float32 && std::string(k.patterns) == "any")
      list.push_back(&k);
  return list;
}

// The modern grid's cases crossed with the pattern kinds it lacks: (left, right) windows
// (one side unbounded, one side 0), chunked (a chunk not dividing L_k, causal, L_q < L_k; a
// chunk longer than the sequence) and neighborhood (dilated; K = L_k, the whole sequence).
std::vector<ModernCase> grad_cases() {
  using K = PatternKind;
  using testing_grid::make_case;
  using testing_grid::token;
  std::vector<ModernCase> out = testing_modern::modern_cases();
  struct Base {
    testing_grid::Case c;
    int64_t hkv;
  };
  auto lr = [](int64_t left, int64_t right, bool causal) {
    PatternSpec s = token(K::window, 0, 1, causal, 16);
    s.window_left = left;
    s.window_right = right;
    return s;
  };
  auto chunked = [](int64_t chunk, bool causal) {
    PatternSpec s = token(K::dense, 0, 1, causal, 32);
    s.kind = K::chunked;
    s.chunk_size = chunk;
    return s;
  };
  auto neighborhood = [](int64_t kernel_size, int64_t dilation, bool causal) {
    PatternSpec s = token(K::dense, 0, 1, causal, 16);
    s.kind = K::neighborhood;
    s.kernel_size = kernel_size;
    s.dilation = dilation;
    return s;
  };
  const std::vector<Base> bases = {
      {make_case(lr(-1, 3, false), {2, 4, 90, 120, 16, 16}, true, 1.0), 1},
      {make_case(lr(9, 0, false), {1, 8, 130, 100, 8, 8}, false, 1.0), 1},
      {make_case(chunked(37, true), {1, 4, 80, 150, 16, 16}, false, 1.0), 2},
      {make_case(chunked(1000, false), {2, 2, 70, 70, 8, 8}, true, 1.0), 1},
      {make_case(neighborhood(7, 2, false), {1, 8, 100, 120, 16, 16}, false, 1.0), 2},
      {make_case(neighborhood(61, 1, true), {1, 2, 61, 61, 8, 8}, false, 1.0), 2},
  };
  namespace tm = testing_modern;
  for (const Base& b : bases)
    for (unsigned m : {tm::kNone, tm::kCap, tm::kAlibi, tm::kSink, tm::kAll}) {
      ModernCase c{"", b.c, b.hkv, m};
      c.name = b.c.name + "_Hkv" + std::to_string(b.hkv) + (m == tm::kNone ? "_gqa" : "") +
               (m & tm::kCap ? "_cap" : "") + (m & tm::kAlibi ? "_alibi" : "") +
               (m & tm::kSink ? "_sink" : "");
      out.push_back(std::move(c));
    }
  return out;
}

// The largest share of the tolerance used per kernel and output over the grid cases run in
// this process, printed at the end (asserts nothing; the figures of docs/backward.md).
std::map<std::string, double>& worst_budget() {
  static std::map<std::string, double> m;
  return m;
}
class BudgetSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [name, used] : worst_budget())
      std::printf("[ budget ] %s: worst |x - ref| / (atol + rtol |ref|) = %.3g\n", name.c_str(), used);
  }
};
const auto* const kBudgetSummary = ::testing::AddGlobalTestEnvironment(new BudgetSummary);

class ModernGrad : public ::testing::TestWithParam<ModernCase> {};

TEST_P(ModernGrad, EveryCpuBackwardMatchesB1AtItsStatedTolerance) {
  const ModernCase& c = GetParam();
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  const ScoreMods mods = testing_modern::mods_of(c);
  const double* scale = std::isnan(c.base.scale) ? nullptr : &c.base.scale;
  const PatternSizes& z = c.base.sizes;
  const Tensor<double> dout = testing_inputs::random_tensor(
      {z.batch, z.num_heads, z.seq_len_q, c.base.head_dim_v}, testing_inputs::seed_of(c.name) + 3);
  const GradientResult oracle = b1_dense_masked_grad(in.q, in.k, in.v, dout, pattern, scale, mods);
  const Problem problem = make_problem(in.q, in.k, in.v, pattern, scale, mods);

  const std::vector<const GradKernel*> list = cpu_grad_kernels();
  ASSERT_GE(list.size(), 2u);  // kb01, kb02
  for (const GradKernel* kernel : list) {
    SCOPED_TRACE(kernel->name);
    ASSERT_EQ(kernel->features, kModern);
    ASSERT_TRUE(kernel->serves(pattern));
    const Tolerance tol{kernel->atol, kernel->rtol};
    ASSERT_EQ(tol.atol, kTolFloat32.atol);
    ASSERT_EQ(tol.rtol, kTolFloat32.rtol);
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(*kernel, gp);
    GradOutput out;
    kernel->run(gp, out);
    ASSERT_EQ(out.dk32.shape, oracle.dk.shape);  // [B, H_kv, L_k, D]
    const CheckReport rq = check_close(out.dq32, oracle.dq, tol);
    const CheckReport rk = check_close(out.dk32, oracle.dk, tol);
    const CheckReport rv = check_close(out.dv32, oracle.dv, tol);
    EXPECT_TRUE(rq.pass) << report_json(rq, "dq", tol);
    EXPECT_TRUE(rk.pass) << report_json(rk, "dk", tol);
    EXPECT_TRUE(rv.pass) << report_json(rv, "dv", tol);
    double& w = worst_budget()[std::string(kernel->name) + " dq, dk, dv"];
    w = std::max({w, rq.budget_used, rk.budget_used, rv.budget_used});
    if (mods.has_sinks()) {
      ASSERT_EQ(out.dsinks.shape, Shape({z.num_heads}));
      const CheckReport rs = check_close(out.dsinks, oracle.dsinks, tol);
      EXPECT_TRUE(rs.pass) << report_json(rs, "dsinks", tol);
      double& ws = worst_budget()[std::string(kernel->name) + " dsinks"];
      ws = std::max(ws, rs.budget_used);
    } else {
      EXPECT_EQ(out.dsinks.numel(), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, ModernGrad, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<ModernCase>& info) {
                           return info.param.name;
                         });

// dσ_h by hand (contract §7.7): dense causal, L_q = 50 > L_k = 20 (rows 0..29 before the
// first key: lse = σ, o = 0), batch 1 pads its last 4 keys and queries (lse = -inf). The
// rows without keys and the padded queries add nothing, so dσ_h = −Σ over the other rows
// of exp(σ_h − lse)·<dO, o>, computed here in float64 from the kernel's own forward o, lse.
TEST(ModernGradSinks, DsinksIsMinusTheSinkShareTimesDoDotOOverRealRows) {
  PatternSpec spec;
  spec.causal = true;
  spec.key_padding_mask = Tensor<uint8_t>({2, 20}, 1);
  for (int64_t j = 16; j < 20; ++j) spec.key_padding_mask->data[20 + j] = 0;
  const Pattern pattern = materialize(spec, {2, 4, 50, 20});
  ScoreMods mods;
  mods.sinks = testing_inputs::random_tensor({4}, 8, -1.0, 2.0);
  mods.softcap = 1.5;
  const Problem problem = make_problem(testing_inputs::random_tensor({2, 4, 50, 8}, 1),
                                       testing_inputs::random_tensor({2, 1, 20, 8}, 2),
                                       testing_inputs::random_tensor({2, 1, 20, 8}, 3), pattern,
                                       nullptr, mods);
  const Tensor<double> dout = testing_inputs::random_tensor({2, 4, 50, 8}, 4);
  for (const GradKernel* kernel : cpu_grad_kernels()) {
    SCOPED_TRACE(kernel->name);
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(*kernel, gp);
    GradOutput out;
    kernel->run(gp, out);
    for (int64_t h = 0; h < 4; ++h) {
      double want = 0.0;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 50; ++i) {
          const int64_t row = (b * 4 + h) * 50 + i;
          const bool no_key = i < 30, padded = b == 1 && i >= 46;
          if (no_key || padded) continue;
          double d = 0.0;
          for (int64_t e = 0; e < 8; ++e) d += dout.data[row * 8 + e] * gp.o32.data[row * 8 + e];
          want -= std::exp(mods.sinks->data[h] - gp.lse32.data[row]) * d;
        }
      EXPECT_NEAR(out.dsinks.data[h], want, 1e-5 * (1.0 + std::fabs(want))) << "head " << h;
    }
  }
}

// contract §4.6 on the modern backward: GQA g = 4 on one kv head, every modifier, key
// padding: 1 and 3 threads give bit-identical dq, dk, dv and dsinks.
TEST(ModernGradDeterminism, OneAndThreeThreadsAgreeBitForBit) {
  PatternSpec spec = testing_grid::token(PatternKind::window, 30, 1, true, 64);
  spec.key_padding_mask = testing_grid::key_padding(2, 200, 9);
  const Pattern pattern = materialize(spec, {2, 4, 200, 200});
  ScoreMods mods;
  mods.softcap = 2.0;
  mods.alibi_slopes = testing_inputs::random_tensor({2, 4}, 6, 0.0, 0.2);
  mods.sinks = testing_inputs::random_tensor({4}, 7);
  const Problem problem = make_problem(testing_inputs::random_tensor({2, 4, 200, 32}, 1),
                                       testing_inputs::random_tensor({2, 1, 200, 32}, 2),
                                       testing_inputs::random_tensor({2, 1, 200, 24}, 3), pattern,
                                       nullptr, mods);
  const Tensor<double> dout = testing_inputs::random_tensor({2, 4, 200, 24}, 4);
  const int saved = omp_get_max_threads();
  for (const GradKernel* kernel : cpu_grad_kernels()) {
    SCOPED_TRACE(kernel->name);
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(*kernel, gp);
    omp_set_num_threads(1);
    GradOutput one;
    kernel->run(gp, one);
    omp_set_num_threads(3);
    GradOutput three;
    kernel->run(gp, three);
    for (auto [a, b] : {std::pair{&one.dq32, &three.dq32}, {&one.dk32, &three.dk32},
                        {&one.dv32, &three.dv32}}) {
      ASSERT_EQ(a->data.size(), b->data.size());
      EXPECT_EQ(0, std::memcmp(a->ptr(), b->ptr(), a->data.size() * sizeof(float)));
    }
    ASSERT_EQ(one.dsinks.data.size(), 4u);
    EXPECT_EQ(0, std::memcmp(one.dsinks.ptr(), three.dsinks.ptr(), 4 * sizeof(double)));
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace sparseattn
