// Checks contract §2.7 (grouped-query heads), §2.8 (the score pipeline: softcap, ALiBi) and
// §2.9 (sinks) on the oracle, a1_dense_masked, against hand-computed values: each case has
// one query against a few keys with head_dim 1, so every score is a number written here,
// and the expected o and lse follow from the contract's formulas by hand (the arithmetic is
// in each comment). Bad values of each parameter are refused naming its field.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/field.h"
#include "core/seeded_inputs.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"

namespace sparseattn {
namespace {

using testing_inputs::random_tensor;
constexpr double kInf = std::numeric_limits<double>::infinity();

// q [1, H, Lq, 1], k and v [1, Hkv, Lk, 1] from flat values.
Tensor<double> t4(int64_t heads, int64_t len, std::vector<double> values) {
  Tensor<double> t({1, heads, len, 1});
  t.data = std::move(values);
  return t;
}

Pattern dense(int64_t heads, int64_t lq, int64_t lk, bool causal = false) {
  PatternSpec spec;
  spec.causal = causal;
  return materialize(spec, {1, heads, lq, lk});
}

Tensor<double> vec(std::vector<double> values) {
  Tensor<double> t({static_cast<int64_t>(values.size())});
  t.data = std::move(values);
  return t;
}

// One query (p = 2) against keys k = (0, 1, 2), q = 1, scale 1: raw scores s = (0, 2, 4)
// with k = (0, 2, 4); values v = (0, 1, 2).
struct ThreeKeys {
  Tensor<double> q = t4(1, 1, {1.0});
  Tensor<double> k = t4(1, 3, {0.0, 2.0, 4.0});
  Tensor<double> v = t4(1, 3, {0.0, 1.0, 2.0});
  Pattern p = dense(1, 1, 3);
  double scale = 1.0;
};

TEST(ModernAttention, SoftcapCapsTheScaledScore) {
  // c = 2: s = 2·tanh(s/2) = (0, 1.5231883119, 1.9280551602);
  // lse = log(1 + e^1.5231883 + e^1.9280552) = 2.5227602757,
  // o = (e^1.5231883 + 2·e^1.9280552) / (1 + e^1.5231883 + e^1.9280552) = 1.4714874148.
  ThreeKeys c;
  ScoreMods m;
  m.softcap = 2.0;
  const AttentionResult r = a1_dense_masked(c.q, c.k, c.v, c.p, &c.scale, m);
  EXPECT_NEAR(r.o.data[0], 1.4714874148081698, 1e-13);
  EXPECT_NEAR(r.lse.data[0], 2.5227602756612386, 1e-13);
  // The cap acts on the *scaled* score (Gemma 2): scale 2 with c = 4 doubles s before the
  // cap, 4·tanh(2s/4) = 2·(2·tanh(s/2)): twice the c = 2 scores above.
  ScoreMods m4;
  m4.softcap = 4.0;
  const double two = 2.0;
  const AttentionResult r4 = a1_dense_masked(c.q, c.k, c.v, c.p, &two, m4);
  // lse = log(1 + e^3.0463766 + e^3.8561103) = 4.2744..., o from the same weights.
  const double s1 = 4.0 * std::tanh(1.0), s2 = 4.0 * std::tanh(2.0);
  const double l = 1.0 + std::exp(s1) + std::exp(s2);
  EXPECT_NEAR(r4.lse.data[0], std::log(l), 1e-13);
  EXPECT_NEAR(r4.o.data[0], (std::exp(s1) + 2.0 * std::exp(s2)) / l, 1e-13);
}

TEST(ModernAttention, AlibiSubtractsSlopeTimesDistance) {
  // Raw scores 0 (k = 0), slope a = 0.5, query at p = 2: s = -0.5·|2 - j| = (-1, -0.5, 0);
  // lse = log(e^-1 + e^-0.5 + 1) = 0.6802696706, o = (e^-0.5 + 2) / (e^-1 + e^-0.5 + 1)
  // = 1.3201566678.
  ThreeKeys c;
  c.k = t4(1, 3, {0.0, 0.0, 0.0});
  ScoreMods m;
  m.alibi_slopes = vec({0.5});
  const AttentionResult r = a1_dense_masked(c.q, c.k, c.v, c.p, &c.scale, m);
  EXPECT_NEAR(r.o.data[0], 1.3201566678298062, 1e-13);
  EXPECT_NEAR(r.lse.data[0], 0.6802696706417346, 1e-13);
  // The distance is symmetric (FlashAttention 2): a query at p = 0 (L_q = 3, first row)
  // sees (0, -0.5, -1), the mirror image, so its o is (e^-0.5 + 2e^-1) / (1 + e^-0.5 + e^-1).
  const Tensor<double> q3 = t4(1, 3, {1.0, 1.0, 1.0});
  const AttentionResult r3 = a1_dense_masked(q3, c.k, c.v, dense(1, 3, 3), &c.scale, m);
  const double l = 1.0 + std::exp(-0.5) + std::exp(-1.0);
  EXPECT_NEAR(r3.o.data[0], (std::exp(-0.5) + 2.0 * std::exp(-1.0)) / l, 1e-13);
}

TEST(ModernAttention, SoftcapComesBeforeAlibi) {
  // contract §2.8's order: s = 2·tanh(raw/2) - 0.5·|2 - j| = (-1, 1.0231883, 1.9280552):
  // o = 1.6491332055. The other order, 2·tanh((raw - 0.5|p - j|)/2), gives 1.5980032394.
  ThreeKeys c;
  ScoreMods m;
  m.softcap = 2.0;
  m.alibi_slopes = vec({0.5});
  const AttentionResult r = a1_dense_masked(c.q, c.k, c.v, c.p, &c.scale, m);
  EXPECT_NEAR(r.o.data[0], 1.649133205520727, 1e-13);
  EXPECT_NEAR(r.lse.data[0], 2.305187144099328, 1e-13);
}

TEST(ModernAttention, AlibiSlopesPerBatchElement) {
  // [B, H_q] slopes: batch 0 slope 0 (no bias: o = mean of v = 1), batch 1 slope 0.5 (o as
  // AlibiSubtractsSlopeTimesDistance: 1.3201566678).
  Tensor<double> q({2, 1, 1, 1}, 1.0), k({2, 1, 3, 1}, 0.0), v({2, 1, 3, 1});
  v.data = {0, 1, 2, 0, 1, 2};
  ScoreMods m;
  m.alibi_slopes = Tensor<double>({2, 1});
  m.alibi_slopes->data = {0.0, 0.5};
  const double one = 1.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(1, 1, 3), &one, m);
  EXPECT_NEAR(r.o.data[0], 1.0, 1e-14);
  EXPECT_NEAR(r.o.data[1], 1.3201566678298062, 1e-13);
}

TEST(ModernAttention, AlibiSlopesPerBatchElementAndHeadAreReadRowMajor) {
  // [B, H_q] = [2, 2] slopes ((0, 0.5), (1, 0)): a[b, h] is entry b·H_q + h. Each (b, h) row
  // is AlibiSubtractsSlopeTimesDistance's case with its own slope a: o = (e^-a + 2) /
  // (e^-2a + e^-a + 1): a = 0 gives 1, a = 0.5 gives 1.3201566678, a = 1 gives
  // (e^-1 + 2) / (e^-2 + e^-1 + 1) = 1.5752103826. Read transposed (h·B + b), head 1 of
  // batch 0 would take a = 1 and head 0 of batch 1 a = 0.5.
  Tensor<double> q({2, 2, 1, 1}, 1.0), k({2, 2, 3, 1}, 0.0), v({2, 2, 3, 1});
  v.data = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
  ScoreMods m;
  m.alibi_slopes = Tensor<double>({2, 2});
  m.alibi_slopes->data = {0.0, 0.5, 1.0, 0.0};
  const double one = 1.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(2, 1, 3), &one, m);
  EXPECT_NEAR(r.o.data[0], 1.0, 1e-14);                 // b 0, h 0: a = 0
  EXPECT_NEAR(r.o.data[1], 1.3201566678298062, 1e-13);  // b 0, h 1: a = 0.5
  EXPECT_NEAR(r.o.data[2], 1.5752103826044412, 1e-13);  // b 1, h 0: a = 1
  EXPECT_NEAR(r.o.data[3], 1.0, 1e-14);                 // b 1, h 1: a = 0
  EXPECT_NEAR(r.lse.data[2], 0.4076059644443804, 1e-13);  // log(e^-2 + e^-1 + 1)
}

TEST(ModernAttention, SinkEntersTheDenominatorWithZeroValue) {
  // Two keys with score 0 and a sink σ = log 2: lse = log(2 + e^0 + e^0) = log 4,
  // p_j = 1/4 each, o = (v0 + v1)/4 = (1 + 3)/4 = 1: the sink takes half the mass.
  const Tensor<double> q = t4(1, 1, {1.0}), k = t4(1, 2, {0.0, 0.0}), v = t4(1, 2, {1.0, 3.0});
  ScoreMods m;
  m.sinks = vec({std::log(2.0)});
  const double one = 1.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(1, 1, 2), &one, m);
  EXPECT_NEAR(r.lse.data[0], std::log(4.0), 1e-14);
  EXPECT_NEAR(r.o.data[0], 1.0, 1e-14);
  // A very negative sink changes nothing measurable: o = mean(v) = 2, lse = log 2.
  m.sinks = vec({-800.0});
  const AttentionResult r0 = a1_dense_masked(q, k, v, dense(1, 1, 2), &one, m);
  EXPECT_NEAR(r0.o.data[0], 2.0, 1e-14);
  EXPECT_NEAR(r0.lse.data[0], std::log(2.0), 1e-14);
}

TEST(ModernAttention, SinkOfARowWithoutKeysAndOfAPaddedQuery) {
  // Causal, L_q = 2 > L_k = 1: query 0 sits at p = -1 and attends nothing, but it is a real
  // row: o = 0, lse = σ (contract §2.9). Query 1 (p = 0) attends key 0 (score 0): lse =
  // log(e^σ + 1), o = v0 / (e^σ + 1).
  const Tensor<double> q = t4(2, 2, {1.0, 1.0, 1.0, 1.0}), k = t4(2, 1, {0.0, 0.0}),
                       v = t4(2, 1, {4.0, 4.0});
  ScoreMods m;
  m.sinks = vec({0.5, -1.0});  // per head: head 0 σ = 0.5, head 1 σ = -1
  const double one = 1.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(2, 2, 1, /*causal=*/true), &one, m);
  EXPECT_EQ(r.o.data[0], 0.0);
  EXPECT_EQ(r.lse.data[0], 0.5);
  EXPECT_NEAR(r.lse.data[1], std::log(std::exp(0.5) + 1.0), 1e-14);
  EXPECT_NEAR(r.o.data[1], 4.0 / (std::exp(0.5) + 1.0), 1e-14);
  EXPECT_EQ(r.lse.data[2], -1.0);  // head 1, query 0: its own sink
  // A padded query does not exist: o = 0, lse = -inf, whatever the sink.
  PatternSpec spec;
  spec.key_padding_mask = Tensor<uint8_t>({1, 2});
  spec.key_padding_mask->data = {1, 0};  // key 1 padded, and with it query 1 (L_q = L_k)
  const Pattern padded = materialize(spec, {1, 1, 2, 2});
  const Tensor<double> q2 = t4(1, 2, {1.0, 1.0}), k2 = t4(1, 2, {0.0, 0.0}),
                       v2 = t4(1, 2, {4.0, 4.0});
  m.sinks = vec({0.5});
  const AttentionResult rp = a1_dense_masked(q2, k2, v2, padded, &one, m);
  EXPECT_EQ(rp.o.data[1], 0.0);
  EXPECT_EQ(rp.lse.data[1], -kInf);
  EXPECT_NEAR(rp.o.data[0], 4.0 / (std::exp(0.5) + 1.0), 1e-14);  // real: key 0 and the sink
}

TEST(ModernAttention, GroupedQueryHeadsReadKvHeadHOverG) {
  // H_q = 4, H_kv = 2 (g = 2): query heads 0, 1 read kv head 0 (v = 1 everywhere), heads 2, 3
  // read kv head 1 (v = 2): o is exactly 1, 1, 2, 2 per head. Reading h mod H_kv would give
  // 1, 2, 1, 2.
  const int64_t Lq = 3, Lk = 5;
  const Tensor<double> q = random_tensor({1, 4, Lq, 2}, 1), k = random_tensor({1, 2, Lk, 2}, 2);
  Tensor<double> v({1, 2, Lk, 1});
  for (int64_t j = 0; j < Lk; ++j) v.data[j] = 1.0, v.data[Lk + j] = 2.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(4, Lq, Lk), nullptr);
  const double want[4] = {1.0, 1.0, 2.0, 2.0};
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < Lq; ++i) EXPECT_NEAR(r.o.data[h * Lq + i], want[h], 1e-15) << h;
}

TEST(ModernAttention, GroupedQueryHeadsEqualRepeatedKvHeads) {
  // g = 4, H_kv = 2, causal, L_q != L_k, with every score modifier: the oracle on grouped k, v
  // equals the oracle on k, v repeated g times per head (repeat_interleave), exactly.
  const int64_t Hq = 8, Hkv = 2, g = 4, Lq = 5, Lk = 7, D = 3;
  const Tensor<double> q = random_tensor({2, Hq, Lq, D}, 3), k = random_tensor({2, Hkv, Lk, D}, 4),
                       v = random_tensor({2, Hkv, Lk, D}, 5);
  Tensor<double> kr({2, Hq, Lk, D}), vr({2, Hq, Lk, D});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t e = 0; e < Lk * D; ++e) {
        kr.data[(b * Hq + h) * Lk * D + e] = k.data[(b * Hkv + h / g) * Lk * D + e];
        vr.data[(b * Hq + h) * Lk * D + e] = v.data[(b * Hkv + h / g) * Lk * D + e];
      }
  ScoreMods m;
  m.softcap = 0.7;
  m.alibi_slopes = random_tensor({Hq}, 6, 0.0, 1.0);
  m.sinks = random_tensor({Hq}, 7);
  const Pattern p = dense(Hq, Lq, Lk, /*causal=*/true);
  const AttentionResult grouped = a1_dense_masked(q, k, v, p, nullptr, m);
  const AttentionResult repeated = a1_dense_masked(q, kr, vr, p, nullptr, m);
  EXPECT_EQ(grouped.o.data, repeated.o.data);
  EXPECT_EQ(grouped.lse.data, repeated.lse.data);
}

TEST(ModernAttention, ModifiersNeverRescueADisallowedKey) {
  // Causal self-attention, L = 2: query 0 (p = 0) may not attend key 1. However large key 1's
  // score, and with a softcap and a slope, query 0's o is v0 and its lse is key 0's score.
  const Tensor<double> q = t4(1, 2, {1.0, 1.0}), k = t4(1, 2, {0.0, 50.0}),
                       v = t4(1, 2, {1.0, 9.0});
  ScoreMods m;
  m.softcap = 1.0;
  m.alibi_slopes = vec({-3.0});  // a negative slope *raises* distant scores: still masked
  const double one = 1.0;
  const AttentionResult r = a1_dense_masked(q, k, v, dense(1, 2, 2, /*causal=*/true), &one, m);
  EXPECT_EQ(r.o.data[0], 1.0);
  EXPECT_EQ(r.lse.data[0], 0.0);  // 1·tanh(0/1) + 3·|0 - 0| = 0
}

TEST(ModernAttention, BadValuesNameTheirField) {
  ThreeKeys c;
  auto field_of = [&](const ScoreMods& m) {
    try {
      a1_dense_masked(c.q, c.k, c.v, c.p, &c.scale, m);
    } catch (const FieldError& e) {
      return std::make_pair(e.field(), std::string(e.what()));
    }
    return std::make_pair(Field::pattern, std::string("no error"));
  };
  for (double cap : {0.0, -1.0, kInf, std::nan("")}) {
    ScoreMods m;
    m.softcap = cap;
    const auto [field, what] = field_of(m);
    EXPECT_EQ(field, Field::softcap) << what;
    EXPECT_NE(what.find("must be a finite number > 0"), std::string::npos) << what;
  }
  ScoreMods sinks_len;
  sinks_len.sinks = vec({0.0, 0.0});
  EXPECT_EQ(field_of(sinks_len).first, Field::sinks) << field_of(sinks_len).second;
  EXPECT_NE(field_of(sinks_len).second.find("sinks shape"), std::string::npos);
  ScoreMods sinks_nan;
  sinks_nan.sinks = vec({std::nan("")});
  EXPECT_NE(field_of(sinks_nan).second.find("sinks[0]"), std::string::npos);
  ScoreMods slopes_shape;
  slopes_shape.alibi_slopes = Tensor<double>({1, 1, 1});
  EXPECT_EQ(field_of(slopes_shape).first, Field::alibi_slopes);
  ScoreMods slopes_inf;
  slopes_inf.alibi_slopes = vec({kInf});
  EXPECT_NE(field_of(slopes_inf).second.find("alibi_slopes[0]"), std::string::npos);
}

TEST(ModernAttention, HeadCountsThatDoNotGroupAreRefusedNamingBoth) {
  const Tensor<double> q = random_tensor({1, 3, 2, 2}, 1), k = random_tensor({1, 2, 2, 2}, 2),
                       v = random_tensor({1, 2, 2, 2}, 3);
  try {
    a1_dense_masked(q, k, v, dense(3, 2, 2), nullptr);
    FAIL() << "H_q = 3 with H_kv = 2 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "invalid k num_heads = 2: must divide q num_heads (3) for grouped-query "
                 "attention");
  }
  // v with other heads than k.
  const Tensor<double> q4 = random_tensor({1, 4, 2, 2}, 1), v1 = random_tensor({1, 1, 2, 2}, 3);
  EXPECT_THROW(a1_dense_masked(q4, k, v1, dense(4, 2, 2), nullptr), InvalidArgument);
  // A step that does not read grouped heads refuses them by name.
  try {
    a2_sparse_rows(q4, k, random_tensor({1, 2, 2, 2}, 4), dense(4, 2, 2), nullptr);
    FAIL() << "a2 accepted grouped heads";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("does not serve grouped-query heads"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sparseattn

// ---- contract §7.7: the gradient oracle with the attention of current models ----------

namespace sparseattn {
namespace {

// L = Σ dO ∘ a1(q, k, v; mods).o, the loss whose gradients b1 returns.
double modern_loss(const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
                   const Tensor<double>& dout, const Pattern& p, const ScoreMods& m) {
  const AttentionResult r = a1_dense_masked(q, k, v, p, nullptr, m);
  double l = 0.0;
  for (size_t e = 0; e < r.o.data.size(); ++e) l += dout.data[e] * r.o.data[e];
  return l;
}

// max |central difference − g| / max |g| over every element of `x` (h = 1e-5).
double fd_error(Tensor<double>& x, const Tensor<double>& g, const std::function<double()>& loss) {
  const double h = 1e-5;
  double worst = 0.0, gmax = 0.0;
  for (size_t e = 0; e < x.data.size(); ++e) {
    const double x0 = x.data[e];
    x.data[e] = x0 + h;
    const double up = loss();
    x.data[e] = x0 - h;
    const double down = loss();
    x.data[e] = x0;
    worst = std::max(worst, std::fabs((up - down) / (2 * h) - g.data[e]));
    gmax = std::max(gmax, std::fabs(g.data[e]));
  }
  return gmax == 0.0 ? worst : worst / gmax;
}

struct ModernGradCase {
  const char* name;
  int64_t Hq, Hkv, Lq, Lk;
  bool causal, padding, softcap, alibi, sinks;
};

class ModernGradients : public ::testing::TestWithParam<ModernGradCase> {};

TEST_P(ModernGradients, OracleGradientsMatchCentralDifferences) {
  const ModernGradCase& c = GetParam();
  const int64_t B = 2, D = 3, Dv = 2;
  Tensor<double> q = random_tensor({B, c.Hq, c.Lq, D}, 31), k = random_tensor({B, c.Hkv, c.Lk, D}, 32),
                 v = random_tensor({B, c.Hkv, c.Lk, Dv}, 33);
  for (double& x : q.data) x *= 2.5;  // scores near the cap's bend
  const Tensor<double> dout = random_tensor({B, c.Hq, c.Lq, Dv}, 34);
  PatternSpec spec;
  spec.kind = PatternKind::window;
  spec.window = 2;
  spec.causal = c.causal;
  if (c.padding) {  // batch 1: its last two keys padded
    spec.key_padding_mask = Tensor<uint8_t>({B, c.Lk}, 1);
    spec.key_padding_mask->data[static_cast<size_t>(2 * c.Lk - 1)] = 0;
    spec.key_padding_mask->data[static_cast<size_t>(2 * c.Lk - 2)] = 0;
  }
  const Pattern p = materialize(spec, {B, c.Hq, c.Lq, c.Lk});
  ScoreMods m;
  if (c.softcap) m.softcap = 1.3;
  if (c.alibi) m.alibi_slopes = random_tensor({B, c.Hq}, 35, 0.0, 0.5);
  if (c.sinks) m.sinks = random_tensor({c.Hq}, 36);
  const GradientResult g = b1_dense_masked_grad(q, k, v, dout, p, nullptr, m);
  ASSERT_EQ(g.dk.shape, (Shape{B, c.Hkv, c.Lk, D}));
  ASSERT_EQ(g.dv.shape, (Shape{B, c.Hkv, c.Lk, Dv}));
  auto loss = [&] { return modern_loss(q, k, v, dout, p, m); };
  EXPECT_LE(fd_error(q, g.dq, loss), 1e-6) << "dq";
  EXPECT_LE(fd_error(k, g.dk, loss), 1e-6) << "dk";
  EXPECT_LE(fd_error(v, g.dv, loss), 1e-6) << "dv";
  if (c.sinks) {
    ASSERT_EQ(g.dsinks.shape, (Shape{c.Hq}));
    EXPECT_LE(fd_error(*m.sinks, g.dsinks, loss), 1e-6) << "dsinks";
  } else {
    EXPECT_TRUE(g.dsinks.data.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Contract, ModernGradients,
    ::testing::Values(ModernGradCase{"gqa_g2", 4, 2, 5, 5, false, false, false, false, false},
                      ModernGradCase{"mqa_causal_Lq_lt_Lk", 3, 1, 4, 7, true, true, false, false, false},
                      ModernGradCase{"softcap", 2, 2, 6, 6, false, false, true, false, false},
                      ModernGradCase{"alibi_padding", 2, 1, 5, 6, false, true, false, true, false},
                      ModernGradCase{"sinks_causal_Lq_gt_Lk", 2, 2, 6, 4, true, false, false, false, true},
                      ModernGradCase{"everything", 4, 2, 5, 7, true, true, true, true, true}),
    [](const ::testing::TestParamInfo<ModernGradCase>& info) { return info.param.name; });

TEST(ModernGradients, SinkGradientIsTheClosedForm) {
  // contract §2.9: dσ_h = −Σ_{b,i} exp(σ_h − lse_{b,h,i}) · <dO_{b,h,i}, o_{b,h,i}>, from a1's
  // own o and lse (an independent route to the same number).
  const Tensor<double> q = random_tensor({2, 2, 5, 3}, 41), k = random_tensor({2, 1, 6, 3}, 42),
                       v = random_tensor({2, 1, 6, 2}, 43), dout = random_tensor({2, 2, 5, 2}, 44);
  ScoreMods m;
  m.sinks = vec({0.3, -0.7});
  const Pattern p = dense(2, 5, 6, /*causal=*/true);
  const AttentionResult r = a1_dense_masked(q, k, v, p, nullptr, m);
  const GradientResult g = b1_dense_masked_grad(q, k, v, dout, p, nullptr, m);
  for (int64_t h = 0; h < 2; ++h) {
    double want = 0.0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5; ++i) {
        const int64_t row = (b * 2 + h) * 5 + i;
        double dot = 0.0;
        for (int64_t d = 0; d < 2; ++d) dot += dout.data[row * 2 + d] * r.o.data[row * 2 + d];
        want -= std::exp(m.sinks->data[h] - r.lse.data[row]) * dot;
      }
    EXPECT_NEAR(g.dsinks.data[h], want, 1e-14) << h;
  }
}

}  // namespace
}  // namespace sparseattn
