// Checks contract §4.2 (the pass rule and its one checker).
// The checker itself (one checker, itself tested). A checker that passes bad
// output hides every other bug, so each way an output can be wrong is shown to fail:
// a perturbation just over the budget, a NaN, an Inf, a shifted row; and the ways it can
// be right (exact, -inf against -inf, just inside the budget) are shown to pass.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/numerics.h"

namespace sparseattn {
namespace {

constexpr Tolerance kTol{1e-6, 1e-3};  // round numbers make the budgets hand-checkable

// reference[r][c] = r + c/8 + 1: distinct rows, no zeros, exactly representable.
Tensor<double> reference_2x4x3() {
  Tensor<double> t({2, 4, 3});
  for (int64_t e = 0; e < t.numel(); ++e) t.data[e] = static_cast<double>(e / 3) + (e % 3) / 8.0 + 1;
  return t;
}

TEST(Check, ExactCopyPassesWithZeroBudget) {
  const Tensor<double> ref = reference_2x4x3();
  const CheckReport r = check_close(ref, ref, kTol);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.num_elements, 24);
  EXPECT_EQ(r.num_mismatched, 0);
  EXPECT_EQ(r.max_abs_error, 0.0);
  EXPECT_EQ(r.budget_used, 0.0);
}

TEST(Check, Float32CandidateOfExactValuesPasses) {
  const Tensor<double> ref = reference_2x4x3();
  const CheckReport r = check_close(tensor_cast<float>(ref), ref, kTolFloat32);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.budget_used, 0.0);  // every value is a float exactly
}

TEST(Check, BudgetUsedIsErrorOverAllowance) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  // Element 7 (row 2, column 1) has ref = 2 + 1/8 + 1 = 3.125: allowance
  // 1e-6 + 1e-3 * 3.125 = 0.003126.
  ASSERT_EQ(ref.data[7], 3.125);
  const double allowance = 1e-6 + 1e-3 * 3.125;
  x.data[7] += 0.5 * allowance;
  const CheckReport r = check_close(x, ref, kTol);
  EXPECT_TRUE(r.pass);
  EXPECT_NEAR(r.budget_used, 0.5, 1e-9);
  EXPECT_EQ(r.worst_index, 7);
  EXPECT_EQ(r.worst_position, (Shape{0, 2, 1}));
  EXPECT_NEAR(r.max_abs_error, 0.5 * allowance, 1e-15);
  EXPECT_NEAR(r.max_rel_error, 0.5 * allowance / 3.125, 1e-15);
}

TEST(Check, PerturbationJustOverTheBudgetFails) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  const double ref_value = ref.data[13];  // 4 + 1/8 + 1
  x.data[13] -= 1.01 * (1e-6 + 1e-3 * ref_value);
  const CheckReport r = check_close(x, ref, kTol);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.num_mismatched, 1);
  EXPECT_EQ(r.num_nonfinite, 0);
  EXPECT_EQ(r.worst_index, 13);
  EXPECT_NEAR(r.budget_used, 1.01, 1e-9);
  EXPECT_NE(r.reason.find("outside atol + rtol*|ref|"), std::string::npos) << r.reason;
}

TEST(Check, NaNFailsEvenWhereEveryOtherElementIsExact) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  x.data[5] = NAN;
  const CheckReport r = check_close(x, ref, kTol);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.num_nonfinite, 1);
  EXPECT_EQ(r.worst_index, 5);
  EXPECT_TRUE(std::isinf(r.budget_used));
  EXPECT_NE(r.reason.find("non-finite"), std::string::npos) << r.reason;
}

TEST(Check, NaNInAFloat32CandidateFails) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<float> x = tensor_cast<float>(ref);
  x.data[0] = NAN;
  EXPECT_FALSE(check_close(x, ref, kTolFloat32).pass);
}

TEST(Check, InfFailsAndSoDoesTheWrongInfinity) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  x.data[2] = INFINITY;
  EXPECT_FALSE(check_close(x, ref, kTol).pass);

  // lse of a fully masked row is -inf; +inf or a finite value there is wrong.
  Tensor<double> lse_ref({3}, 0.5);
  lse_ref.data[1] = -INFINITY;
  Tensor<double> lse = lse_ref;
  lse.data[1] = INFINITY;
  EXPECT_FALSE(check_close(lse, lse_ref, kTol).pass);
  lse.data[1] = -1e300;
  const CheckReport r = check_close(lse, lse_ref, kTol);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.num_mismatched, 1);
  EXPECT_EQ(r.worst_index, 1);
}

TEST(Check, MinusInfAgainstMinusInfPasses) {
  Tensor<double> lse_ref({4}, 1.25);
  lse_ref.data[0] = lse_ref.data[3] = -INFINITY;
  const CheckReport r = check_close(lse_ref, lse_ref, kTol);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.budget_used, 0.0);
  EXPECT_EQ(r.num_nonfinite, 0);
}

TEST(Check, ShiftedRowFails) {
  // Row r of the candidate holds the reference's row r+1 (an off-by-one in a kernel's
  // row index): every element of those rows is off by 1, far outside the budget.
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 3; ++c) x.data[r * 3 + c] = ref.data[(r + 1) * 3 + c];
  const CheckReport r = check_close(x, ref, kTol);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.num_mismatched, 21);
  EXPECT_NEAR(r.max_abs_error, 1.0, 1e-15);
}

TEST(Check, ShapeMismatchFailsButLeadingOnesAreIgnored) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  x.shape = {4, 2, 3};
  const CheckReport bad = check_close(x, ref, kTol);
  EXPECT_FALSE(bad.pass);
  EXPECT_NE(bad.reason.find("shape mismatch"), std::string::npos);
  x.shape = {1, 1, 2, 4, 3};
  EXPECT_TRUE(check_close(x, ref, kTol).pass);
}

// Found by tests/fuzz/fuzz_check: with atol = rtol = 0 an exact match computed its budget
// as 0/0, so a passing report carried budget_used = NaN (null in the JSON report).
TEST(Check, ZeroToleranceExactMatchUsesNoBudgetAndAnyErrorAnUnboundedOne) {
  const Tensor<double> ref = reference_2x4x3();
  const Tolerance zero{0.0, 0.0};
  const CheckReport same = check_close(ref, ref, zero);
  EXPECT_TRUE(same.pass);
  EXPECT_EQ(same.budget_used, 0.0);
  const nlohmann::json j = nlohmann::json::parse(report_json(same, "o", zero));
  EXPECT_EQ(j["budget_used"], 0.0);

  Tensor<double> x = ref;
  x.data[5] = std::nextafter(ref.data[5], 100.0);  // one ulp off
  const CheckReport off = check_close(x, ref, zero);
  EXPECT_FALSE(off.pass);
  EXPECT_EQ(off.num_mismatched, 1);
  EXPECT_EQ(off.worst_index, 5);
  EXPECT_EQ(off.budget_used, INFINITY);
}

// The error and the allowance can both overflow to +inf: |x - ref| = 2e308 against
// 0 + 2 * 1e308 is exactly at the limit (budget 1, pass), never inf/inf = NaN.
TEST(Check, OverflowingErrorAgainstOverflowingAllowanceIsAtTheLimit) {
  Tensor<double> ref({2}, 1e308);
  Tensor<double> x = ref;
  x.data[1] = -1e308;
  const CheckReport r = check_close(x, ref, Tolerance{0.0, 2.0});
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.budget_used, 1.0);
  EXPECT_EQ(r.worst_index, 1);
  EXPECT_FALSE(check_close(x, ref, Tolerance{0.0, 1.0}).pass);  // 2e308 > 1e308
}

TEST(Check, ToleranceTableIsNeverLooserThanTheDocumentedValues) {
  // docs/numerics.md; a change here must be a deliberate, documented change.
  EXPECT_EQ(kTolFloat64.atol, 1e-12);
  EXPECT_EQ(kTolFloat64.rtol, 1e-12);
  EXPECT_EQ(kTolFloat32.atol, 2e-5);
  EXPECT_EQ(kTolFloat32.rtol, 2e-4);
  EXPECT_LE(kTolFloat16.atol, 2e-3);
  EXPECT_LE(kTolBfloat16.atol, 1.6e-2);
}

TEST(Check, ReportJsonCarriesTheNumbersAndNullForInfinity) {
  const Tensor<double> ref = reference_2x4x3();
  Tensor<double> x = ref;
  x.data[23] = NAN;
  const nlohmann::json j = nlohmann::json::parse(report_json(check_close(x, ref, kTol), "o", kTol));
  EXPECT_EQ(j["tensor"], "o");
  EXPECT_EQ(j["pass"], false);
  EXPECT_EQ(j["num_nonfinite"], 1);
  EXPECT_EQ(j["worst_index"], nlohmann::json::array({1, 3, 2}));
  EXPECT_TRUE(j["budget_used"].is_null());
  EXPECT_TRUE(j["worst_candidate"].is_null());
  EXPECT_EQ(j["atol"], 1e-6);
}

}  // namespace
}  // namespace sparseattn
