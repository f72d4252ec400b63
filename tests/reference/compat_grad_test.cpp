// Checks contract §7.4–§7.6: the gradients under the other conventions
// (reference/backward/compat_grad.h) against central finite differences of their forward
// definitions — HF BigBird's listing (hf_listing_oracle, a block listed twice counted
// twice), Longformer's per-batch globals and global projections (longformer_compat with
// a1_dense_masked), a finite masked score (masked_score_attention) — for every gradient
// tensor, the global projections' included. With the loss L = Σ dO ∘ o, dL/dx is the
// gradient of x exactly, so (L(x + h) − L(x − h)) / 2h must match it element by element:
// |fd − grad| ≤ 1e-6 · max |grad| per tensor (contract §7.3's bound), h = 1e-5.
// Each mode also shows that the gradient of the OTHER convention (set semantics, q/k/v for
// the global rows, masked keys removed) fails the same bound, so the check can fail; and a
// few tiny cases are checked against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "reference/backward/compat_grad.h"
#include "reference/compat.h"
#include "reference/masked_score.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_inputs::random_tensor;
using Inputs = std::vector<Tensor<double>>;            // the tensors the forward reads
using Forward = std::function<Tensor<double>(const Inputs&)>;  // -> o [B,H,Lq,Dv]

double loss(const Inputs& x, const Tensor<double>& dout, const Forward& f) {
  const Tensor<double> o = f(x);
  double l = 0.0;
  for (size_t e = 0; e < o.data.size(); ++e) l += dout.data[e] * o.data[e];
  return l;
}

// max |fd − g| / max |g| where fd perturbs x[which] element by element.
double fd_relative_error(Inputs x, size_t which, const Tensor<double>& g,
                         const Tensor<double>& dout, const Forward& f) {
  const double h = 1e-5;
  EXPECT_EQ(x[which].data.size(), g.data.size());
  double worst = 0.0, gmax = 0.0;
  for (size_t e = 0; e < x[which].data.size(); ++e) {
    const double x0 = x[which].data[e];
    x[which].data[e] = x0 + h;
    const double up = loss(x, dout, f);
    x[which].data[e] = x0 - h;
    const double down = loss(x, dout, f);
    x[which].data[e] = x0;
    worst = std::max(worst, std::fabs((up - down) / (2 * h) - g.data[e]));
    gmax = std::max(gmax, std::fabs(g.data[e]));
  }
  return gmax == 0.0 ? worst : worst / gmax;
}

// Asserts every tensor of `grads` (named) against finite differences of `f` and prints
// the figure docs/backward.md quotes.
void expect_fd(const std::string& name, const Inputs& x, const std::vector<const Tensor<double>*>& grads,
               const std::vector<std::string>& names, const Tensor<double>& dout, const Forward& f) {
  for (size_t t = 0; t < grads.size(); ++t) {
    const double err = fd_relative_error(x, t, *grads[t], dout, f);
    EXPECT_LE(err, 1e-6) << name << " " << names[t];
    std::printf("[ fd ] %s %s max|fd - grad| / max|grad| = %.2e\n", name.c_str(), names[t].c_str(), err);
  }
}

Tensor<int64_t> table(Shape shape, std::vector<int64_t> values) {
  Tensor<int64_t> t(std::move(shape), 0);
  t.data = std::move(values);
  return t;
}

// ---- §7.4 HF BigBird's listing ----------------------------------------------------------

struct HfCase {
  std::string name;
  int64_t batch, heads, block, blocks, d, dv;
  Tensor<int64_t> rand_attn;
  bool padded;
};

std::vector<HfCase> hf_cases() {
  return {
      // Every draw repeats a block the row already lists (HF's eval-mode table is all 0).
      {"hf_b2_nb5_r2_allrepeats_B1_H1_D3_Dv2", 1, 1, 2, 5, 3, 2, table({1, 3, 2}, {0, 0, 4, 4, 1, 1}), false},
      // Two heads with their own tables, some draws new, some repeats; padding in batch 1.
      {"hf_b2_nb6_r1_B2_H2_D2_Dv3_keypadding", 2, 2, 2, 6, 2, 3,
       table({2, 4, 1}, {3, 5, 0, 2, 1, 1, 4, 4}), true},
  };
}

TEST(HfListingGrad, EveryGradientMatchesFiniteDifferencesOfTheListingDefinition) {
  for (const HfCase& c : hf_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t n = c.block * c.blocks;
    const BlockListing l = hf_bigbird_listing(n, c.block, c.heads, c.rand_attn);
    Tensor<uint8_t> pad({c.batch, n}, 1);
    if (c.padded)
      for (int64_t j = n - 3; j < n; ++j) pad.data[(c.batch - 1) * n + j] = 0;
    const uint64_t seed = testing_inputs::seed_of(c.name);
    const Inputs x = {random_tensor({c.batch, c.heads, n, c.d}, seed),
                      random_tensor({c.batch, c.heads, n, c.d}, seed + 1),
                      random_tensor({c.batch, c.heads, n, c.dv}, seed + 2)};
    const Tensor<double> dout = random_tensor({c.batch, c.heads, n, c.dv}, seed + 3);
    const double scale = 0.8;
    const Forward f = [&](const Inputs& t) {
      return hf_listing_oracle(t[0], t[1], t[2], l, &pad, &scale).o;
    };
    const CompatGradientResult g = hf_listing_grad(x[0], x[1], x[2], dout, l, &pad, &scale);
    expect_fd(c.name, x, {&g.dq, &g.dk, &g.dv}, {"dq", "dk", "dv"}, dout, f);
    EXPECT_EQ(g.dq_global.numel(), 0);
    // A padded query row contributes nothing and gets dq = 0; a padded key dk = dv = 0.
    if (c.padded)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t j = n - 3; j < n; ++j)
          for (int64_t e = 0; e < c.d; ++e) {
            const size_t at = static_cast<size_t>((((c.batch - 1) * c.heads + h) * n + j) * c.d + e);
            EXPECT_EQ(g.dq.data[at], 0.0);
            EXPECT_EQ(g.dk.data[at], 0.0);
          }
  }
}

// The set-semantics gradient (b1 on the ITC pattern with the same table) is the gradient
// of a different function where blocks repeat: the finite-difference bound catches it.
TEST(HfListingGrad, SetSemanticsGradientFailsWhereBlocksRepeat) {
  const HfCase c = hf_cases()[0];
  const int64_t n = c.block * c.blocks;
  const BlockListing l = hf_bigbird_listing(n, c.block, 1, c.rand_attn);
  PatternSpec spec;
  spec.kind = PatternKind::bigbird;
  spec.block_size = c.block;
  spec.random_table = c.rand_attn;
  const Pattern set = materialize(spec, PatternSizes{1, 1, n, n});
  const Inputs x = {random_tensor({1, 1, n, c.d}, 5), random_tensor({1, 1, n, c.d}, 6),
                    random_tensor({1, 1, n, c.dv}, 7)};
  const Tensor<double> dout = random_tensor({1, 1, n, c.dv}, 8);
  const Forward f = [&](const Inputs& t) { return hf_listing_oracle(t[0], t[1], t[2], l, nullptr, nullptr).o; };
  const GradientResult wrong = b1_dense_masked_grad(x[0], x[1], x[2], dout, set, nullptr);
  EXPECT_GT(fd_relative_error(x, 0, wrong.dq, dout, f), 1e-3);
  EXPECT_GT(fd_relative_error(x, 2, wrong.dv, dout, f), 1e-3);
}

// ---- §7.5 Longformer per-batch globals and global projections ---------------------------

struct LfCase {
  std::string name;
  int64_t batch, heads, seq_len_q, seq_len_k, d, dv, window;
  std::vector<int64_t> global;          // spec.global (without a mask)
  std::vector<std::vector<int64_t>> mask_globals;  // per batch element; empty: no mask
  bool projections, padded;
};

std::vector<LfCase> lf_cases() {
  return {
      {"longformer_w1_globalmask_B2_H1_L7_D3_Dv2", 2, 1, 7, 7, 3, 2, 1, {}, {{0, 4}, {}}, false, false},
      {"longformer_w1_Gx0x5_projections_B1_H2_L8_D3_Dv2", 1, 2, 8, 8, 3, 2, 1, {0, 5}, {}, true, false},
      {"longformer_w2_globalmask_projections_B2_H1_L9_D2_Dv3_keypadding", 2, 1, 9, 9, 2, 3, 2, {},
       {{1, 6}, {0}}, true, true},
      // seq_len_q < seq_len_k: query i sits at key position i + 3 (contract §3.1); key 2
      // is global but has no query row, key 5's query row is 2.
      {"longformer_w1_globalmask_projections_B1_H1_Lq6_Lk9_D3_Dv2", 1, 1, 6, 9, 3, 2, 1, {},
       {{2, 5}}, true, false},
  };
}

struct LfSetup {
  PatternSpec spec;
  Tensor<uint8_t> mask;
  bool has_mask = false;
};

LfSetup lf_setup(const LfCase& c) {
  LfSetup s;
  s.spec.kind = PatternKind::longformer;
  s.spec.window = c.window;
  s.spec.tile = 4;
  s.spec.global = c.global;
  if (c.padded) {
    Tensor<uint8_t> pad({c.batch, c.seq_len_k}, 1);
    for (int64_t j = c.seq_len_k - 2; j < c.seq_len_k; ++j) pad.data[(c.batch - 1) * c.seq_len_k + j] = 0;
    s.spec.key_padding_mask = pad;
  }
  if (!c.mask_globals.empty()) {
    s.has_mask = true;
    s.mask = Tensor<uint8_t>({c.batch, c.seq_len_k}, 0);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j : c.mask_globals[b]) s.mask.data[b * c.seq_len_k + j] = 1;
  }
  return s;
}

// The forward definition with the oracle a1 as its attention (what `attend` runs for
// --impl a1_dense_masked). x = q, k, v[, q_global, k_global, v_global].
AttentionResult lf_forward(const Inputs& x, const LfSetup& s, const double* scale) {
  LongformerGlobals g;
  if (s.has_mask) g.global_mask = s.mask;
  if (x.size() == 6) g.q_global = &x[3], g.k_global = &x[4], g.v_global = &x[5];
  const AttendFn a1 = [&](const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
                          const Pattern& p) { return a1_dense_masked(q, k, v, p, scale); };
  return longformer_compat(x[0], x[1], x[2], s.spec, g, a1);
}

CompatGradientResult lf_grad(const Inputs& x, const Tensor<double>& dout, const LfSetup& s,
                             const double* scale) {
  LongformerGlobals g;
  if (s.has_mask) g.global_mask = s.mask;
  if (x.size() == 6) g.q_global = &x[3], g.k_global = &x[4], g.v_global = &x[5];
  return longformer_compat_grad(x[0], x[1], x[2], dout, s.spec, g, scale);
}

Inputs lf_inputs(const LfCase& c) {
  const uint64_t seed = testing_inputs::seed_of(c.name);
  Inputs x = {random_tensor({c.batch, c.heads, c.seq_len_q, c.d}, seed),
              random_tensor({c.batch, c.heads, c.seq_len_k, c.d}, seed + 1),
              random_tensor({c.batch, c.heads, c.seq_len_k, c.dv}, seed + 2)};
  if (c.projections) {
    x.push_back(random_tensor({c.batch, c.heads, c.seq_len_q, c.d}, seed + 4));
    x.push_back(random_tensor({c.batch, c.heads, c.seq_len_k, c.d}, seed + 5));
    x.push_back(random_tensor({c.batch, c.heads, c.seq_len_k, c.dv}, seed + 6));
  }
  return x;
}

TEST(LongformerCompatGrad, EveryGradientMatchesFiniteDifferencesOfTheModeDefinition) {
  for (const LfCase& c : lf_cases()) {
    SCOPED_TRACE(c.name);
    const LfSetup s = lf_setup(c);
    const Inputs x = lf_inputs(c);
    const Tensor<double> dout =
        random_tensor({c.batch, c.heads, c.seq_len_q, c.dv}, testing_inputs::seed_of(c.name) + 3);
    const double scale = 0.9;
    const Forward f = [&](const Inputs& t) { return lf_forward(t, s, &scale).o; };
    const CompatGradientResult g = lf_grad(x, dout, s, &scale);
    if (c.projections) {
      expect_fd(c.name, x, {&g.dq, &g.dk, &g.dv, &g.dq_global, &g.dk_global, &g.dv_global},
                {"dq", "dk", "dv", "dq_global", "dk_global", "dv_global"}, dout, f);
    } else {
      EXPECT_EQ(g.dq_global.numel(), 0);
      expect_fd(c.name, x, {&g.dq, &g.dk, &g.dv}, {"dq", "dk", "dv"}, dout, f);
    }
  }
}

// Under the projections the q row at a global position moves nothing (its o reads
// q_global), so dq there is exactly 0, and a non-global row's dq_global is exactly 0.
TEST(LongformerCompatGrad, GlobalRowsMoveOnlyTheGlobalProjections) {
  const LfCase c = lf_cases()[1];  // globals {0, 5}, two heads
  const LfSetup s = lf_setup(c);
  const Inputs x = lf_inputs(c);
  const Tensor<double> dout = random_tensor({1, c.heads, c.seq_len_q, c.dv}, 41);
  const CompatGradientResult g = lf_grad(x, dout, s, nullptr);
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i = 0; i < c.seq_len_q; ++i) {
      const bool global = i == 0 || i == 5;
      for (int64_t e = 0; e < c.d; ++e) {
        const size_t at = static_cast<size_t>((h * c.seq_len_q + i) * c.d + e);
        if (global) {
          EXPECT_EQ(g.dq.data[at], 0.0) << h << "," << i;
          EXPECT_NE(g.dq_global.data[at], 0.0) << h << "," << i;
        } else {
          EXPECT_EQ(g.dq_global.data[at], 0.0) << h << "," << i;
        }
      }
    }
}

// Planted mistakes, each a plausible way to get the mode wrong, each caught by the bound:
// b1 on q, k, v as if the global rows used them (the projections ignored); dq with the
// global rows' term dropped where there are no projections (rows zeroed as if there were);
// one batch element's global set used for the whole batch.
TEST(LongformerCompatGrad, PlantedMistakesFailTheFiniteDifferenceBound) {
  {  // projections ignored
    const LfCase c = lf_cases()[1];
    const LfSetup s = lf_setup(c);
    const Inputs x = lf_inputs(c);
    const Tensor<double> dout = random_tensor({1, c.heads, c.seq_len_q, c.dv}, 42);
    const Forward f = [&](const Inputs& t) { return lf_forward(t, s, nullptr).o; };
    const Pattern p = materialize(s.spec, PatternSizes{1, c.heads, c.seq_len_q, c.seq_len_k});
    const GradientResult wrong = b1_dense_masked_grad(x[0], x[1], x[2], dout, p, nullptr);
    EXPECT_GT(fd_relative_error(x, 0, wrong.dq, dout, f), 1e-3);
    EXPECT_GT(fd_relative_error(x, 1, wrong.dk, dout, f), 1e-3);
  }
  {  // no projections: the global rows' term dropped from dq; batch 0's globals for batch 1
    const LfCase c = lf_cases()[0];
    const LfSetup s = lf_setup(c);
    const Inputs x = lf_inputs(c);
    const Tensor<double> dout = random_tensor({c.batch, 1, c.seq_len_q, c.dv}, 43);
    const Forward f = [&](const Inputs& t) { return lf_forward(t, s, nullptr).o; };
    CompatGradientResult g = lf_grad(x, dout, s, nullptr);
    Tensor<double> dropped = g.dq;
    for (int64_t i : {0, 4})
      for (int64_t e = 0; e < c.d; ++e) dropped.data[static_cast<size_t>(i * c.d + e)] = 0.0;
    EXPECT_GT(fd_relative_error(x, 0, dropped, dout, f), 1e-3);
    LfSetup one = s;
    for (int64_t j = 0; j < c.seq_len_k; ++j) one.mask.data[c.seq_len_k + j] = one.mask.data[j];
    const CompatGradientResult shared = lf_grad(x, dout, one, nullptr);
    EXPECT_GT(fd_relative_error(x, 1, shared.dk, dout, f), 1e-3);
  }
}

// Two tokens, window 0, token 0 global, scale 1, head_dim 1, with projections. Row 0
// (global) is attention(qg_0, kg, vg) over both keys; row 1 attends itself and the global
// key with q, k, v. Row 1: s = (q1 k0, q1 k1) = (0, ln 3), p = (1/4, 3/4), do_1 = 1,
// dp = (v0, v1) = (1, 3), D = 1/4 + 9/4 = 5/2, ds = (1/4 · (1 − 5/2), 3/4 · (3 − 5/2)) =
// (−3/8, 3/8): dq_1 = −3/8 · 0 + 3/8 · ln 3, dk = (−3/8, 3/8) · q1, dv = (1/4, 3/4).
// Row 0: kg = (0, 0) so p = (1/2, 1/2), do_0 = 2, dp = (2, 6), D = 4, ds = (−1, 1):
// dq_global_0 = −kg0 + kg1 = 0, dk_global = (−1, 1) · qg0, dv_global = (1, 1).
TEST(LongformerCompatGrad, TwoTokensByHand) {
  LfSetup s;
  s.spec.kind = PatternKind::longformer;
  s.spec.window = 0;
  s.spec.global = {0};
  auto t = [](std::vector<double> v) {
    Tensor<double> x({1, 1, 2, 1}, 0.0);
    x.data = std::move(v);
    return x;
  };
  const Inputs x = {t({0.7, 1.0}), t({0.0, std::log(3.0)}), t({1.0, 3.0}),
                    t({1.0, -0.4}), t({0.0, 0.0}), t({1.0, 3.0})};
  const Tensor<double> dout = t({2.0, 1.0});
  const double scale = 1.0;
  const CompatGradientResult g = lf_grad(x, dout, s, &scale);
  EXPECT_EQ(g.dq.data, (std::vector<double>{0.0, 0.375 * std::log(3.0)}));
  EXPECT_NEAR(g.dk.data[0], -0.375, 1e-15);
  EXPECT_NEAR(g.dk.data[1], 0.375, 1e-15);
  EXPECT_NEAR(g.dv.data[0], 0.25, 1e-15);
  EXPECT_NEAR(g.dv.data[1], 0.75, 1e-15);
  EXPECT_EQ(g.dq_global.data, (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(g.dk_global.data, (std::vector<double>{-1.0, 1.0}));
  EXPECT_EQ(g.dv_global.data, (std::vector<double>{1.0, 1.0}));
}

// ---- §7.6 a finite masked score -----------------------------------------------------------

struct MsCase {
  std::string name;
  PatternSpec spec;
  int64_t batch, heads, seq_len_q, seq_len_k, d, dv;
  double value;
};

std::vector<MsCase> ms_cases() {
  PatternSpec causal_window;
  causal_window.kind = PatternKind::window;
  causal_window.window = 1;
  causal_window.causal = true;
  causal_window.tile = 3;
  PatternSpec padded = causal_window;
  padded.causal = false;
  Tensor<uint8_t> pad({2, 6}, 1);
  pad.data[4] = pad.data[5] = 0;                             // batch 0: last two keys padded
  for (int64_t j = 0; j < 6; ++j) pad.data[6 + j] = 0;       // batch 1: everything padded
  padded.key_padding_mask = pad;
  return {
      // seq_len_q > seq_len_k, bottom-right causal: rows 0..2 before key 0, no allowed key.
      {"window_w1_causal_B1_H1_Lq7_Lk4_D3_Dv2_masked_m3", causal_window, 1, 1, 7, 4, 3, 2, -3.0},
      // FlagAttention's -1e6: the masked keys weigh exp(-1e6) = 0 except in empty rows.
      {"window_w1_causal_B1_H2_Lq7_Lk4_D2_Dv3_masked_m1e6", causal_window, 1, 2, 7, 4, 2, 3, -1e6},
      // A positive VALUE (masked keys outweigh the allowed ones); padded queries and keys.
      {"window_w1_B2_H1_Lq6_Lk6_D4_Dv2_keypadding_masked_p1p5", padded, 2, 1, 6, 6, 4, 2, 1.5},
  };
}

TEST(MaskedScoreGrad, EveryGradientMatchesFiniteDifferencesOfTheMaskedFillDefinition) {
  for (const MsCase& c : ms_cases()) {
    SCOPED_TRACE(c.name);
    const Pattern p = materialize(c.spec, PatternSizes{c.batch, c.heads, c.seq_len_q, c.seq_len_k});
    const uint64_t seed = testing_inputs::seed_of(c.name);
    const Inputs x = {random_tensor({c.batch, c.heads, c.seq_len_q, c.d}, seed),
                      random_tensor({c.batch, c.heads, c.seq_len_k, c.d}, seed + 1),
                      random_tensor({c.batch, c.heads, c.seq_len_k, c.dv}, seed + 2)};
    const Tensor<double> dout = random_tensor({c.batch, c.heads, c.seq_len_q, c.dv}, seed + 3);
    const Forward f = [&](const Inputs& t) {
      return masked_score_attention(t[0], t[1], t[2], p, nullptr, c.value).o;
    };
    const GradientResult g = masked_score_grad(x[0], x[1], x[2], dout, p, nullptr, c.value);
    expect_fd(c.name, x, {&g.dq, &g.dk, &g.dv}, {"dq", "dk", "dv"}, dout, f);
  }
}

// A row with no allowed key has o = mean(v): dq = 0 exactly and dv_j = Σ over such rows of
// do_i / L_k (the first case: rows 0..2 are empty and nothing else reaches key 3's dv
// except rows that attend it).
TEST(MaskedScoreGrad, EmptyRowsSpreadDoutEvenlyOverDv) {
  const MsCase c = ms_cases()[1];  // -1e6: an allowed key outweighs the masked ones fully
  const Pattern p = materialize(c.spec, PatternSizes{1, c.heads, c.seq_len_q, c.seq_len_k});
  const Tensor<double> q = random_tensor({1, c.heads, c.seq_len_q, c.d}, 1);
  const Tensor<double> k = random_tensor({1, c.heads, c.seq_len_k, c.d}, 2);
  const Tensor<double> v = random_tensor({1, c.heads, c.seq_len_k, c.dv}, 3);
  Tensor<double> dout({1, c.heads, c.seq_len_q, c.dv}, 0.0);
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i = 0; i < 3; ++i)  // only the empty rows carry a gradient
      for (int64_t e = 0; e < c.dv; ++e) dout.data[static_cast<size_t>((h * c.seq_len_q + i) * c.dv + e)] = 1.0 + i + e;
  const GradientResult g = masked_score_grad(q, k, v, dout, p, nullptr, c.value);
  for (double x : g.dq.data) EXPECT_EQ(x, 0.0);
  for (double x : g.dk.data) EXPECT_EQ(x, 0.0);
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t j = 0; j < c.seq_len_k; ++j)
      for (int64_t e = 0; e < c.dv; ++e)  // (1 + 2 + 3 + 3e) / 4
        EXPECT_DOUBLE_EQ(g.dv.data[static_cast<size_t>((h * c.seq_len_k + j) * c.dv + e)], (6.0 + 3 * e) / 4.0);
}

// The gradient with masked keys removed (b1) is the -inf convention's: with VALUE = -3 the
// masked keys carry weight, and the bound catches it.
TEST(MaskedScoreGrad, RemovedKeysGradientFailsTheBound) {
  const MsCase c = ms_cases()[0];
  const Pattern p = materialize(c.spec, PatternSizes{1, 1, c.seq_len_q, c.seq_len_k});
  const Inputs x = {random_tensor({1, 1, c.seq_len_q, c.d}, 11), random_tensor({1, 1, c.seq_len_k, c.d}, 12),
                    random_tensor({1, 1, c.seq_len_k, c.dv}, 13)};
  const Tensor<double> dout = random_tensor({1, 1, c.seq_len_q, c.dv}, 14);
  const Forward f = [&](const Inputs& t) { return masked_score_attention(t[0], t[1], t[2], p, nullptr, c.value).o; };
  const GradientResult wrong = b1_dense_masked_grad(x[0], x[1], x[2], dout, p, nullptr);
  EXPECT_GT(fd_relative_error(x, 0, wrong.dq, dout, f), 1e-3);
  EXPECT_GT(fd_relative_error(x, 2, wrong.dv, dout, f), 1e-3);
}

// One query, two keys, key 0 allowed, key 1 masked with VALUE 0, scale 1, head_dim 1:
// s = (q k0, 0) = (ln 3, 0), p = (3/4, 1/4); v = (2, -2), do = 1: dp = (2, -2), D = 1,
// ds_0 = 3/4 · (2 − 1) = 3/4 (ds_1 = −3/4 has no path to q or k):
// dq = 3/4 · k0 = 3/4 · ln 3, dk = (3/4 · q, 0) = (3/4, 0), dv = (3/4, 1/4).
TEST(MaskedScoreGrad, TwoKeysByHand) {
  PatternSpec spec;
  spec.kind = PatternKind::explicit_mask;
  Tensor<uint8_t> m({1, 2}, 0);
  m.data = {1, 0};
  spec.mask = m;
  const Pattern p = materialize(spec, PatternSizes{1, 1, 1, 2});
  Tensor<double> q({1, 1, 1, 1}, 1.0), k({1, 1, 2, 1}, 0.0), v({1, 1, 2, 1}, 0.0), dout({1, 1, 1, 1}, 1.0);
  k.data = {std::log(3.0), 5.0};
  v.data = {2.0, -2.0};
  const double scale = 1.0;
  const GradientResult g = masked_score_grad(q, k, v, dout, p, &scale, 0.0);
  EXPECT_NEAR(g.dq.data[0], 0.75 * std::log(3.0), 1e-15);
  EXPECT_NEAR(g.dk.data[0], 0.75, 1e-15);
  EXPECT_EQ(g.dk.data[1], 0.0);
  EXPECT_NEAR(g.dv.data[0], 0.75, 1e-15);
  EXPECT_NEAR(g.dv.data[1], 0.25, 1e-15);
}

TEST(CompatGrad, WrongDoutShapeIsRefusedByName) {
  const Tensor<double> q = random_tensor({1, 1, 4, 2}, 1), v = random_tensor({1, 1, 4, 3}, 2);
  const Tensor<double> bad = random_tensor({1, 1, 4, 2}, 3);  // dv is 3
  PatternSpec dense;
  const Pattern p = materialize(dense, PatternSizes{1, 1, 4, 4});
  try {
    masked_score_grad(q, q, v, bad, p, nullptr, -1e9);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dout shape");
  }
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = 1;
  EXPECT_THROW(longformer_compat_grad(q, q, v, bad, lf, {}, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn
