// Checks contract §2 and §4.3 (every reference step against the oracle at kTolFloat64).
// Every step of the reference ladder against the oracle a1_dense_masked, over the grid of
// tests/reference/grid.h, at the tolerance each step declares in the registry
// (kTolFloat64 for all of them: only the summation order differs).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/check.h"
#include "core/error.h"
#include "tests/reference/grid.h"
#include "tests/reference/ladder_steps.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;
using testing_inputs::random_tensor;

struct Inputs {
  Tensor<double> q, k, v;
};

Inputs inputs_for(const Case& c, uint64_t seed) {
  const PatternSizes& z = c.sizes;
  return {random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2)};
}

const double* scale_ptr(const Case& c) { return std::isnan(c.scale) ? nullptr : &c.scale; }

class LadderVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(LadderVsOracle, EveryServingStepMatchesA1AtItsDeclaredTolerance) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Inputs in = inputs_for(c, testing_inputs::seed_of(c.name));
  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, pattern, scale_ptr(c));

  int served = 0;
  for (const testing_steps::Step& step : testing_steps::steps()) {
    SCOPED_TRACE(step.name);
    EXPECT_STREQ(step.reference, "a1_dense_masked");
    if (!step.serves(pattern)) continue;
    ++served;
    Output out;
    step.run(testing_steps::problem(in.q, in.k, in.v, pattern, c.scale), out);
    const CheckReport o = check_close(out.o, oracle.o, step.tol);
    const CheckReport lse = check_close(out.lse, oracle.lse, step.tol);
    EXPECT_TRUE(o.pass) << report_json(o, "o", step.tol);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", step.tol);
  }
  // Which steps must have run: a1, a2, a4, a5, a6 serve every pattern; a3 only `window`;
  // a3g `window` and `longformer`; a0 only dense without causal. A serves() that wrongly
  // says "no" fails here.
  const bool dense = c.spec.kind == PatternKind::dense && !c.spec.causal;
  const bool window = c.spec.kind == PatternKind::window;
  const bool longformer = c.spec.kind == PatternKind::longformer;
  const int expected = 5 + 2 * window + longformer + dense;
  EXPECT_EQ(served, expected);
}

INSTANTIATE_TEST_SUITE_P(Grid, LadderVsOracle, ::testing::ValuesIn(testing_grid::cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The same grid, a different seed, and each step called directly (not through the
// registry adapter): the step's own validation and defaults (scale = nullptr) are used.
TEST(LadderDirect, EveryStepOnTheWindowGridCaseWithDefaultScale) {
  const Case c = testing_grid::make_case(testing_grid::token(PatternKind::window, 2, 3, false, 5),
                                         {2, 2, 19, 19, 3, 3});
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Inputs in = inputs_for(c, 4242);
  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, pattern, nullptr);
  for (auto step : {&a2_sparse_rows, &a3_window_band, &a3g_longformer_global, &a4_bigbird_blocks,
                    &a5_flash_tiled}) {
    const AttentionResult r = step(in.q, in.k, in.v, pattern, nullptr);
    EXPECT_TRUE(check_close(r.o, oracle.o, kTolFloat64).pass);
    EXPECT_TRUE(check_close(r.lse, oracle.lse, kTolFloat64).pass);
  }
}

// A pattern that allows every pair must reproduce the definition a0 on the dense pattern.
struct FullCoverage {
  std::string name;
  PatternSpec spec;
};

void PrintTo(const FullCoverage& c, std::ostream* os) { *os << c.name; }

class FullCoverageReproducesA0 : public ::testing::TestWithParam<FullCoverage> {};

TEST_P(FullCoverageReproducesA0, EveryServingStepEqualsDenseDefinition) {
  const FullCoverage& fc = GetParam();
  const PatternSizes sizes{2, 3, 11, 11};
  const Pattern full = materialize(fc.spec, sizes);
  const Pattern dense = materialize(PatternSpec{}, sizes);
  ASSERT_EQ(pattern_stats(full).density, 1.0) << "the case must allow every pair";
  const Tensor<double> q = testing_inputs::random_tensor({2, 3, 11, 7}, 1);
  const Tensor<double> k = testing_inputs::random_tensor({2, 3, 11, 7}, 2);
  const Tensor<double> v = testing_inputs::random_tensor({2, 3, 11, 5}, 3);
  const AttentionResult definition = a0_dense(q, k, v, dense, nullptr);
  for (const testing_steps::Step& step : testing_steps::steps()) {
    SCOPED_TRACE(step.name);
    if (!step.serves(full)) continue;
    Output out;
    step.run(testing_steps::problem(q, k, v, full, NAN), out);
    EXPECT_TRUE(check_close(out.o, definition.o, kTolFloat64).pass);
    EXPECT_TRUE(check_close(out.lse, definition.lse, kTolFloat64).pass);
  }
}

std::vector<FullCoverage> full_coverage_cases() {
  using namespace testing_grid;
  std::vector<FullCoverage> c;
  c.push_back({"window_w11_tile5", token(PatternKind::window, 11, 1, false, 5)});
  c.push_back({"window_w100_d1_tile1", token(PatternKind::window, 100, 1, false, 1)});
  c.push_back({"explicit_all_ones_tile5", explicit_mask(Tensor<uint8_t>({11, 11}, 1), 5)});
  c.push_back({"hierarchical_one_segment_tile64", hierarchical(std::vector<int64_t>(11, 0), 64)});
  c.push_back({"bigbird_b4_three_blocks", bigbird(4, 2, 0)});
  c.push_back({"bigbird_etc_g11", bigbird(4, 1, 0, 11)});
  c.push_back({"longformer_global_every_token", token(PatternKind::longformer, 0, 1, false, 5,
                                                      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Full, FullCoverageReproducesA0, ::testing::ValuesIn(full_coverage_cases()),
                         [](const ::testing::TestParamInfo<FullCoverage>& i) { return i.param.name; });

// Steps refuse what they do not serve, by name, instead of computing something else.
TEST(LadderRefuses, A3OnLongformerAndA0OnCausalThrowInvalidArgumentNamingPattern) {
  const PatternSizes sizes{1, 1, 8, 8};
  const Tensor<double> x = testing_inputs::random_tensor({1, 1, 8, 4}, 5);
  const Pattern longformer =
      materialize(testing_grid::token(PatternKind::longformer, 1, 1, false, 5, {0}), sizes);
  const Pattern causal = materialize(testing_grid::token(PatternKind::dense, 0, 1, true, 5), sizes);
  try {
    a3_window_band(x, x, x, longformer, nullptr);
    FAIL() << "a3 accepted a longformer pattern";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.argument().find("pattern"), std::string::npos) << e.what();
  }
  try {
    a0_dense(x, x, x, causal, nullptr);
    FAIL() << "a0 accepted a causal pattern";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.argument().find("pattern"), std::string::npos) << e.what();
  }
}

// Bad calls: every step rejects them with the argument's name (contract §5).
TEST(LadderRejects, ShapeMismatchPatternSizeMismatchAndNonFiniteScaleInEveryStep) {
  const Pattern pattern =
      materialize(testing_grid::token(PatternKind::window, 1, 1, false, 5), {1, 2, 6, 6});
  const Tensor<double> q = testing_inputs::random_tensor({1, 2, 6, 4}, 1);
  const Tensor<double> k_bad_dim = testing_inputs::random_tensor({1, 2, 6, 3}, 2);
  const Tensor<double> q_bad_len = testing_inputs::random_tensor({1, 2, 7, 4}, 3);
  const Tensor<double> q_bad_heads = testing_inputs::random_tensor({1, 3, 6, 4}, 4);
  const double nan_scale = NAN, inf_scale = INFINITY;
  for (auto step : {&a1_dense_masked, &a2_sparse_rows, &a3_window_band, &a3g_longformer_global,
                    &a4_bigbird_blocks, &a5_flash_tiled}) {
    auto argument_of = [&](auto call) -> std::string {
      try {
        call();
      } catch (const InvalidArgument& e) {
        return e.argument();
      }
      return "(nothing thrown)";
    };
    EXPECT_EQ(argument_of([&] { step(q, k_bad_dim, q, pattern, nullptr); }), "k head_dim");
    EXPECT_EQ(argument_of([&] { step(q_bad_len, q, q, pattern, nullptr); }), "q seq_len");
    EXPECT_EQ(argument_of([&] { step(q_bad_heads, q_bad_heads, q_bad_heads, pattern, nullptr); }),
              "q num_heads");
    EXPECT_EQ(argument_of([&] { step(q, q, q, pattern, &nan_scale); }), "scale");
    EXPECT_EQ(argument_of([&] { step(q, q, q, pattern, &inf_scale); }), "scale");
  }
}

}  // namespace
}  // namespace sparseattn
