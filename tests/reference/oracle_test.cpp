// Checks contract §2.1 and §4.1 (the oracle itself).
// The oracle itself, checked two ways that do not go through reference/:
//  1. an independent computation written here from contract §2's formulas, in long double,
//     with the allowed set from tests/reference/allowed_spec.h (contract §3 restated), must
//     agree with a1_dense_masked to 1e-12 relative;
//  2. fully masked rows (explicit empty rows, every key padded, causal queries before the
//     first key) give o = 0 and lse = -inf exactly in every step — never NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/check.h"
#include "tests/reference/allowed_spec.h"
#include "tests/reference/grid.h"
#include "tests/reference/ladder_steps.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;

// contract §2, literally: lse_i = log(sum_{j in A(i)} exp(s_ij)), o_i = sum exp(s_ij - lse_i) v_j,
// s_ij = scale <q_i, k_j>, in long double (64-bit mantissa on x86: a reference with ~3
// more decimal digits than a1's double). No max subtraction is needed: inputs are in
// [-1, 1), so |s_ij| <= sqrt(head_dim) and exp cannot overflow.
AttentionResult independent(const Case& c, const Pattern& p, const Tensor<double>& q,
                            const Tensor<double>& k, const Tensor<double>& v) {
  const PatternSizes& z = c.sizes;
  const int64_t D = c.head_dim, Dv = c.head_dim_v, Lq = z.seq_len_q, Lk = z.seq_len_k;
  const long double scale = std::isnan(c.scale) ? 1.0L / std::sqrt(static_cast<long double>(D))
                                                : static_cast<long double>(c.scale);
  AttentionResult r{Tensor<double>({z.batch, z.num_heads, Lq, Dv}, 0.0),
                    Tensor<double>({z.batch, z.num_heads, Lq}, 0.0)};
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t h = 0; h < z.num_heads; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        std::vector<long double> s(static_cast<size_t>(Lk));
        std::vector<bool> in_A(static_cast<size_t>(Lk));
        long double sum = 0.0L;
        for (int64_t j = 0; j < Lk; ++j) {
          const int64_t position = i + Lk - Lq;
          const uint8_t* kpm = c.spec.key_padding_mask ? c.spec.key_padding_mask->ptr() : nullptr;
          const bool query_real = !kpm || position < 0 || position >= Lk || kpm[b * Lk + position];
          const bool key_real = !kpm || kpm[b * Lk + j];
          in_A[j] = query_real && key_real &&
                    testing_spec::allowed_spec(c.spec, z, p.random_draws, h, i, j);
          if (!in_A[j]) continue;
          long double dot = 0.0L;
          for (int64_t d = 0; d < D; ++d)
            dot += static_cast<long double>(q.data[((b * z.num_heads + h) * Lq + i) * D + d]) *
                   k.data[((b * z.num_heads + h) * Lk + j) * D + d];
          s[j] = scale * dot;
          sum += std::exp(s[j]);
        }
        const int64_t row = (b * z.num_heads + h) * Lq + i;
        if (sum == 0.0L) {
          r.lse.data[row] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const long double lse = std::log(sum);
        r.lse.data[row] = static_cast<double>(lse);
        for (int64_t e = 0; e < Dv; ++e) {
          long double o = 0.0L;
          for (int64_t j = 0; j < Lk; ++j)
            if (in_A[j]) o += std::exp(s[j] - lse) * v.data[((b * z.num_heads + h) * Lk + j) * Dv + e];
          r.o.data[row * Dv + e] = static_cast<double>(o);
        }
      }
  return r;
}

class OracleVsIndependent : public ::testing::TestWithParam<Case> {};

TEST_P(OracleVsIndependent, A1AgreesWithLongDoubleSpecFormulasTo1e12Relative) {
  const Case& c = GetParam();
  const Pattern p = materialize(c.spec, c.sizes);
  const uint64_t seed = testing_inputs::seed_of(c.name) + 17;
  const Tensor<double> q = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_q, c.head_dim}, seed);
  const Tensor<double> k = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_k, c.head_dim}, seed + 1);
  const Tensor<double> v = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_k, c.head_dim_v}, seed + 2);
  const AttentionResult want = independent(c, p, q, k, v);
  const AttentionResult got =
      a1_dense_masked(q, k, v, p, std::isnan(c.scale) ? nullptr : &c.scale);
  // 1e-12 relative; the 1e-14 absolute floor only matters for entries within 1e-2 of 0
  // (an o element is an average of values in [-1, 1) and can cancel to near 0).
  const Tolerance tol{1e-14, 1e-12};
  const CheckReport o = check_close(got.o, want.o, tol);
  const CheckReport lse = check_close(got.lse, want.lse, tol);
  EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
  EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
}

// The grid without its per-head case: allowed_spec() has no per-head row (per-head
// random heads keep no random_draws); pattern_mask_test checks per-head head by head.
std::vector<Case> independent_cases() {
  std::vector<Case> out;
  for (const Case& c : testing_grid::cases())
    if (c.spec.kind != PatternKind::per_head) out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, OracleVsIndependent, ::testing::ValuesIn(independent_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// ----------------------------------------------------------------------------------------
// Fully masked rows.

struct MaskedRowsCase {
  std::string name;
  Case c;
  std::vector<std::pair<int64_t, int64_t>> empty_rows;  // (flat b*H + h, i) expected empty
};

void PrintTo(const MaskedRowsCase& c, std::ostream* os) { *os << c.name; }

std::vector<MaskedRowsCase> masked_rows_cases() {
  using namespace testing_grid;
  std::vector<MaskedRowsCase> m;
  {  // explicit mask whose rows 0 and 3 are all zeros, 1 head
    Tensor<uint8_t> mask({5, 6}, 1);
    for (int64_t j = 0; j < 6; ++j) mask.data[0 * 6 + j] = mask.data[3 * 6 + j] = 0;
    m.push_back({"explicit_rows_0_and_3_empty", make_case(explicit_mask(mask, 5), {1, 1, 5, 6, 3, 2}),
                 {{0, 0}, {0, 3}}});
  }
  {  // causal with seq_len_q > seq_len_k: queries 0, 1 sit before the first key
    m.push_back({"dense_causal_Lq6_Lk4_rows_0_1_empty",
                 make_case(token(PatternKind::dense, 0, 1, true, 5), {1, 2, 6, 4, 3, 3}),
                 {{0, 0}, {0, 1}, {1, 0}, {1, 1}}});
  }
  {  // dense (served by a0 too): batch element 2 is all padding
    Case c = make_case(token(PatternKind::dense, 0, 1, false, 5), {3, 1, 4, 6, 3, 3}, true);
    m.push_back({"dense_batch2_all_keys_padded", c, {{2, 0}, {2, 1}, {2, 2}, {2, 3}}});
  }
  {  // window: batch element 2 is all padding (grid.h's key_padding), every row empty
    Case c = make_case(token(PatternKind::window, 1, 1, false, 5), {3, 1, 4, 4, 3, 3}, true);
    m.push_back({"window_batch2_all_keys_padded", c, {{2, 0}, {2, 1}, {2, 2}, {2, 3}}});
  }
  {  // bigbird: batch element 2 fully padded
    Case c = make_case(bigbird(2, 1, 0), {3, 1, 8, 8, 3, 3}, true);
    std::vector<std::pair<int64_t, int64_t>> rows;
    for (int64_t i = 0; i < 8; ++i) rows.push_back({2, i});
    m.push_back({"bigbird_b2_batch2_all_keys_padded", c, rows});
  }
  return m;
}

class FullyMaskedRows : public ::testing::TestWithParam<MaskedRowsCase> {};

TEST_P(FullyMaskedRows, EveryStepGivesZeroOutputAndMinusInfLseNeverNaN) {
  const MaskedRowsCase& m = GetParam();
  const Case& c = m.c;
  const Pattern p = materialize(c.spec, c.sizes);
  const Tensor<double> q = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_q, c.head_dim}, 1);
  const Tensor<double> k = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_k, c.head_dim}, 2);
  const Tensor<double> v = testing_inputs::random_tensor(
      {c.sizes.batch, c.sizes.num_heads, c.sizes.seq_len_k, c.head_dim_v}, 3);
  const int64_t Lq = c.sizes.seq_len_q, Dv = c.head_dim_v;
  int served = 0;
  for (const testing_steps::Step& step : testing_steps::steps()) {
    SCOPED_TRACE(step.name);
    if (!step.serves(p)) continue;
    ++served;
    Output out;
    step.run(testing_steps::problem(q, k, v, p, NAN), out);
    for (double x : out.o.data) ASSERT_FALSE(std::isnan(x));
    for (double x : out.lse.data) ASSERT_FALSE(std::isnan(x));
    for (auto [bh, i] : m.empty_rows) {
      EXPECT_EQ(out.lse.data[bh * Lq + i], -std::numeric_limits<double>::infinity())
          << "row (b*H+h=" << bh << ", i=" << i << ")";
      for (int64_t e = 0; e < Dv; ++e) EXPECT_EQ(out.o.data[(bh * Lq + i) * Dv + e], 0.0);
    }
  }
  EXPECT_GE(served, 4);
}

INSTANTIATE_TEST_SUITE_P(Cases, FullyMaskedRows, ::testing::ValuesIn(masked_rows_cases()),
                         [](const ::testing::TestParamInfo<MaskedRowsCase>& i) { return i.param.name; });

}  // namespace
}  // namespace sparseattn
