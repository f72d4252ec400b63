// Checks contract §2.7–§2.9 on the reference ladder's modern step, a6_flash_modern: equal to
// the oracle a1_dense_masked (which states the definitions literally) within kTolFloat64 on
// the modern grid (tests/reference/modern_grid.h: g in {1, 2, 4, 8}, H_kv = 1, L_q != L_k
// both ways, causal, key padding, each modifier alone and all together, several pattern
// kinds), and the sink's exact values: a real row with no allowed key has o = 0 and
// lse = σ exactly, a padded query row o = 0 and lse = -inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/field.h"
#include "core/numerics.h"
#include "reference/attention.h"
#include "tests/reference/ladder_steps.h"
#include "tests/reference/modern_grid.h"

namespace sparseattn {
namespace {

using testing_modern::ModernCase;

class ModernLadder : public ::testing::TestWithParam<ModernCase> {};

TEST_P(ModernLadder, A6MatchesTheOracleAtKTolFloat64) {
  const ModernCase& c = GetParam();
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  const ScoreMods mods = testing_modern::mods_of(c);
  const double* scale = std::isnan(c.base.scale) ? nullptr : &c.base.scale;
  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, pattern, scale, mods);
  const AttentionResult r = a6_flash_modern(in.q, in.k, in.v, pattern, scale, mods);
  const CheckReport o = check_close(r.o, oracle.o, kTolFloat64);
  const CheckReport lse = check_close(r.lse, oracle.lse, kTolFloat64);
  EXPECT_TRUE(o.pass) << report_json(o, "o", kTolFloat64);
  EXPECT_TRUE(lse.pass) << report_json(lse, "lse", kTolFloat64);
}

INSTANTIATE_TEST_SUITE_P(Grid, ModernLadder, ::testing::ValuesIn(testing_modern::modern_cases()),
                         [](const ::testing::TestParamInfo<ModernCase>& info) {
                           return info.param.name;
                         });

// Causal, L_q = 6 > L_k = 4, with key padding on batch 1: rows 0 and 1 sit before the first
// key (p < 0), real rows with nothing allowed: o = 0, lse = σ_h exactly. Batch 1 pads key 3
// and with it query 5 (p = 3): o = 0, lse = -inf whatever the sink.
TEST(ModernLadderSinks, RowsWithoutKeysEndAtTheSinkAndPaddedQueriesAtMinusInf) {
  PatternSpec spec;
  spec.causal = true;
  spec.key_padding_mask = Tensor<uint8_t>({2, 4}, 1);
  spec.key_padding_mask->data[4 + 3] = 0;
  const Pattern pattern = materialize(spec, {2, 4, 6, 4});
  const Tensor<double> q = testing_inputs::random_tensor({2, 4, 6, 3}, 1);
  const Tensor<double> k = testing_inputs::random_tensor({2, 2, 4, 3}, 2);
  const Tensor<double> v = testing_inputs::random_tensor({2, 2, 4, 3}, 3);
  ScoreMods mods;
  mods.sinks = testing_inputs::random_tensor({4}, 4, -1.0, 2.0);
  mods.softcap = 0.5;
  mods.alibi_slopes = testing_inputs::random_tensor({4}, 5, 0.0, 1.0);
  const AttentionResult r = a6_flash_modern(q, k, v, pattern, nullptr, mods);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 6; ++i) {
        SCOPED_TRACE(testing::Message() << "b " << b << " h " << h << " i " << i);
        const int64_t row = (b * 4 + h) * 6 + i;
        if (i < 2 || (b == 1 && i == 5)) {
          for (int64_t d = 0; d < 3; ++d) EXPECT_EQ(r.o.data[row * 3 + d], 0.0);
        }
        if (i < 2) {
          EXPECT_EQ(r.lse.data[row], mods.sinks->data[h]);
        } else if (b == 1 && i == 5) {
          EXPECT_EQ(r.lse.data[row], -std::numeric_limits<double>::infinity());
        } else {
          EXPECT_GT(r.lse.data[row], mods.sinks->data[h]);
        }
      }
}

// The registry adapter (reference/entries.cpp) hands a6 the problem's modifiers and grouped
// heads: the same output as the direct call, bit for bit, and not the plain answer.
TEST(ModernLadderRegistry, TheAdapterPassesModsAndGroupedHeads) {
  const ModernCase c = testing_modern::modern_cases()[4];  // dense g = 2, every modifier
  ASSERT_EQ(c.mods, testing_modern::kAll);
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  Problem p;
  p.q = in.q;
  p.k = in.k;
  p.v = in.v;
  p.pattern = &pattern;
  p.shape = attention_shape(in.q.shape, in.k.shape, in.v.shape, KvHeads::grouped);
  p.scale = c.base.scale;
  p.mods = testing_modern::mods_of(c);
  Output out;
  entry::run_a6_flash_modern(p, out);
  const AttentionResult direct = a6_flash_modern(in.q, in.k, in.v, pattern, &p.scale, p.mods);
  EXPECT_EQ(out.o.data, direct.o.data);
  EXPECT_EQ(out.lse.data, direct.lse.data);
  const AttentionResult plain =
      a6_flash_modern(in.q, in.k, in.v, pattern, &p.scale, ScoreMods{});
  EXPECT_NE(out.lse.data, plain.lse.data);
}

// a6 refuses what the oracle refuses: bad modifier values name their field.
TEST(ModernLadderSinks, BadModifiersNameTheirField) {
  const Pattern pattern = materialize(PatternSpec{}, {1, 2, 3, 3});
  const Tensor<double> x = testing_inputs::random_tensor({1, 2, 3, 2}, 1);
  ScoreMods mods;
  mods.sinks = testing_inputs::random_tensor({3}, 2);  // [H_q] = [2] expected
  try {
    a6_flash_modern(x, x, x, pattern, nullptr, mods);
    FAIL() << "no exception";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::sinks) << e.what();
  }
}

}  // namespace
}  // namespace sparseattn
