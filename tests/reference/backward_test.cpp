// The backward reference ladder (reference/backward/, docs/backward.md, contract §7).
//
// 1. The gradient oracle b1 against central finite differences of the FORWARD oracle a1:
//    with the loss L = Σ dO ∘ o (dO fixed), dL/dq = dq, dL/dk = dk, dL/dv = dv exactly, so
//    (L(x + h) − L(x − h)) / 2h must match b1 element by element. Central differences err
//    by O(h²) (truncation) + O(eps / h) (rounding); h = 1e-5 puts both near 1e-10, far
//    below the bound asserted here: |fd − b1| ≤ 1e-6 · max|b1| per tensor.
// 2. b2 and b3 against b1 at kTolFloat64 on the forward grid (tests/reference/grid.h: every
//    pattern kind, seq_len_q ≠ seq_len_k, head_dim ≠ head_dim_v, key padding, fully
//    masked rows), b3 fed the saved o and lse of a5 as in FlashAttention-2.
// 3. Exact zeros: dq of a fully masked row, dk and dv of a key no query attends (padding
//    included) are == 0 in every step, never NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/error.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "tests/reference/grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::bigbird;
using testing_grid::Case;
using testing_grid::make_case;
using testing_grid::token;
using testing_inputs::random_tensor;

struct Tensors {
  Tensor<double> q, k, v, dout;
};

Tensors tensors_for(const Case& c, uint64_t seed) {
  const PatternSizes& z = c.sizes;
  return {random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1),
          random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2),
          random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim_v}, seed + 3)};
}

const double* scale_ptr(const Case& c) { return std::isnan(c.scale) ? nullptr : &c.scale; }

// L = Σ dO ∘ a1(q, k, v).o
double loss(const Tensors& t, const Pattern& pattern, const double* scale) {
  const AttentionResult r = a1_dense_masked(t.q, t.k, t.v, pattern, scale);
  double l = 0.0;
  for (size_t e = 0; e < r.o.data.size(); ++e) l += t.dout.data[e] * r.o.data[e];
  return l;
}

// max |fd − g| / max |g| over one tensor, where fd perturbs `which` (0 q, 1 k, 2 v).
double fd_relative_error(Tensors t, int which, const Tensor<double>& g, const Pattern& pattern,
                         const double* scale) {
  const double h = 1e-5;
  Tensor<double>& x = which == 0 ? t.q : which == 1 ? t.k : t.v;
  double worst = 0.0, gmax = 0.0;
  for (size_t e = 0; e < x.data.size(); ++e) {
    const double x0 = x.data[e];
    x.data[e] = x0 + h;
    const double up = loss(t, pattern, scale);
    x.data[e] = x0 - h;
    const double down = loss(t, pattern, scale);
    x.data[e] = x0;
    const double fd = (up - down) / (2 * h);
    worst = std::max(worst, std::fabs(fd - g.data[e]));
    gmax = std::max(gmax, std::fabs(g.data[e]));
  }
  return gmax == 0.0 ? worst : worst / gmax;
}

// Awkward shapes for the finite-difference check: small enough that 2 forward passes per
// input element stay cheap, every pattern kind, unequal lengths and head dims, key padding
// with a fully padded batch element, rows with no key.
std::vector<Case> fd_cases() {
  using K = PatternKind;
  std::vector<Case> c;
  c.push_back(make_case(token(K::dense, 0, 1, false, 5), {1, 1, 7, 11, 3, 5}, false, 0.9));
  c.push_back(make_case(token(K::dense, 0, 1, true, 5), {1, 2, 9, 5, 4, 3}));  // rows before key 0
  c.push_back(make_case(token(K::window, 2, 2, false, 4), {1, 1, 13, 13, 3, 2}));
  c.push_back(make_case(token(K::window, 1, 1, true, 3), {3, 1, 8, 8, 2, 3}, true));
  c.push_back(make_case(token(K::longformer, 1, 1, false, 4, {0, 6}), {1, 1, 10, 10, 3, 3}));
  c.push_back(make_case(token(K::random, 1, 1, false, 4, {}, 2, 5), {1, 2, 9, 9, 2, 2}));
  c.push_back(make_case(bigbird(3, 1, 4), {1, 1, 13, 13, 3, 2}));
  c.push_back(make_case(bigbird(2, 1, 1, 3), {2, 1, 9, 9, 2, 2}, true));
  c.push_back(make_case(testing_grid::hierarchical({0, 0, 1, 1, 1, 2, 3, 3}, 3), {1, 1, 8, 8, 2, 3}));
  c.push_back(make_case(testing_grid::explicit_mask(testing_grid::random_mask({2, 6, 9}, 3, 2), 4),
                        {1, 2, 6, 9, 3, 2}));
  {  // per-head: a local, a causal dense and a BigBird head side by side
    PatternSpec s;
    s.kind = K::per_head;
    s.tile = 3;
    s.per_head = {token(K::window, 1, 1, false, 3), token(K::dense, 0, 1, true, 3), bigbird(3, 1, 2)};
    c.push_back(make_case(s, {1, 3, 9, 9, 2, 3}));
  }
  return c;
}

class BackwardFiniteDifferences : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardFiniteDifferences, OracleGradientsMatchCentralDifferencesOfTheForwardOracle) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Tensors t = tensors_for(c, testing_inputs::seed_of(c.name));
  const GradientResult g = b1_dense_masked_grad(t.q, t.k, t.v, t.dout, pattern, scale_ptr(c));
  const char* names[3] = {"dq", "dk", "dv"};
  const Tensor<double>* grads[3] = {&g.dq, &g.dk, &g.dv};
  for (int which = 0; which < 3; ++which) {
    const double err = fd_relative_error(t, which, *grads[which], pattern, scale_ptr(c));
    EXPECT_LE(err, 1e-6) << names[which];
    RecordProperty(std::string("fd_rel_error_") + names[which], std::to_string(err));
    std::printf("[ fd ] %s %s max|fd - b1| / max|b1| = %.2e\n", c.name.c_str(), names[which], err);
  }
}

INSTANTIATE_TEST_SUITE_P(Awkward, BackwardFiniteDifferences, ::testing::ValuesIn(fd_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Expects x == 0 exactly for every row of `t` [B,H,L,W] that `zero_row(b, h, i)` names.
template <class ZeroRow>
void expect_zero_rows(const Tensor<double>& t, const char* name, ZeroRow zero_row) {
  const int64_t B = t.shape[0], H = t.shape[1], L = t.shape[2], W = t.shape[3];
  int64_t checked = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        if (!zero_row(b, h, i)) continue;
        ++checked;
        for (int64_t e = 0; e < W; ++e)
          ASSERT_EQ(t.data[((b * H + h) * L + i) * W + e], 0.0)
              << name << "[" << b << "," << h << "," << i << "," << e << "] must be exactly 0";
      }
  ::testing::Test::RecordProperty(std::string("zero_rows_") + name, std::to_string(checked));
}

// Rows with no allowed key, and keys no row attends, from the predicate alone.
struct Silent {
  std::vector<uint8_t> row_empty;  // [B, H, Lq]
  std::vector<uint8_t> key_unused; // [B, H, Lk]
};
Silent silent_of(const Pattern& p, int64_t B) {
  const int64_t H = p.sizes.num_heads, Lq = p.sizes.seq_len_q, Lk = p.sizes.seq_len_k;
  Silent s{std::vector<uint8_t>(B * H * Lq, 1), std::vector<uint8_t>(B * H * Lk, 1)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lk; ++j)
          if (p.allowed(b, h, i, j)) {
            s.row_empty[(b * H + h) * Lq + i] = 0;
            s.key_unused[(b * H + h) * Lk + j] = 0;
          }
  return s;
}

class BackwardLadder : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardLadder, B2AndB3MatchTheOracleAndZerosAreExact) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Tensors t = tensors_for(c, testing_inputs::seed_of(c.name) + 17);
  const GradientResult oracle = b1_dense_masked_grad(t.q, t.k, t.v, t.dout, pattern, scale_ptr(c));
  const AttentionResult fwd = a5_flash_tiled(t.q, t.k, t.v, pattern, scale_ptr(c));
  const GradientResult b2 = b2_sparse_rows_grad(t.q, t.k, t.v, t.dout, pattern, scale_ptr(c));
  const GradientResult b3 =
      b3_flash_tiled_grad(t.q, t.k, t.v, fwd.o, fwd.lse, t.dout, pattern, scale_ptr(c));
  const Silent silent = silent_of(pattern, c.sizes.batch);
  const int64_t H = c.sizes.num_heads, Lq = c.sizes.seq_len_q, Lk = c.sizes.seq_len_k;
  auto empty_row = [&](int64_t b, int64_t h, int64_t i) { return silent.row_empty[(b * H + h) * Lq + i] != 0; };
  auto unused_key = [&](int64_t b, int64_t h, int64_t j) { return silent.key_unused[(b * H + h) * Lk + j] != 0; };
  for (const auto& [name, g] : {std::pair<const char*, const GradientResult*>{"b1", &oracle},
                                {"b2", &b2}, {"b3", &b3}}) {
    SCOPED_TRACE(name);
    for (const auto& [tn, x, ref] : {std::tuple{"dq", &g->dq, &oracle.dq},
                                     std::tuple{"dk", &g->dk, &oracle.dk},
                                     std::tuple{"dv", &g->dv, &oracle.dv}}) {
      const CheckReport r = check_close(*x, *ref, kTolFloat64);
      EXPECT_TRUE(r.pass) << report_json(r, tn, kTolFloat64);
    }
    expect_zero_rows(g->dq, "dq", empty_row);
    expect_zero_rows(g->dk, "dk", unused_key);
    expect_zero_rows(g->dv, "dv", unused_key);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, BackwardLadder, ::testing::ValuesIn(testing_grid::cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// seq_len 1025 with block 64: the last block holds one token (the shape where public
// block-sparse backward passes have returned NaN). Checked against the oracle and for NaN.
TEST(BackwardLadderLong, Bigbird1025Block64WithKeyPadding) {
  PatternSpec spec = bigbird(64, 2, 3);
  const Case c = make_case(spec, {2, 1, 1025, 1025, 16, 8}, true);
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Tensors t = tensors_for(c, 99);
  const GradientResult oracle = b1_dense_masked_grad(t.q, t.k, t.v, t.dout, pattern, nullptr);
  const AttentionResult fwd = a5_flash_tiled(t.q, t.k, t.v, pattern, nullptr);
  const GradientResult b3 = b3_flash_tiled_grad(t.q, t.k, t.v, fwd.o, fwd.lse, t.dout, pattern, nullptr);
  EXPECT_TRUE(check_close(b3.dq, oracle.dq, kTolFloat64).pass);
  EXPECT_TRUE(check_close(b3.dk, oracle.dk, kTolFloat64).pass);
  EXPECT_TRUE(check_close(b3.dv, oracle.dv, kTolFloat64).pass);
  for (double x : oracle.dq.data) ASSERT_TRUE(std::isfinite(x));
}

TEST(BackwardLadderInput, WrongDoutShapeIsRefusedNamingDout) {
  const Pattern pattern = materialize(token(PatternKind::dense, 0, 1, false, 64), {1, 1, 4, 4});
  const Tensor<double> q = random_tensor({1, 1, 4, 3}, 1), k = random_tensor({1, 1, 4, 3}, 2),
                       v = random_tensor({1, 1, 4, 2}, 3), bad = random_tensor({1, 1, 4, 3}, 4);
  try {
    b1_dense_masked_grad(q, k, v, bad, pattern, nullptr);
    FAIL() << "dout [1,1,4,3] for o [1,1,4,2] was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dout shape");
  }
  EXPECT_THROW(b2_sparse_rows_grad(q, k, v, bad, pattern, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn

namespace sparseattn {
namespace {

// The finite-difference check can fail: a gradient off by 0.1 %, or the right gradient of
// another dO (dO + 0.5), is far outside the 1e-6 bound.
TEST(BackwardFiniteDifferencesSelfTest, AWrongGradientFails) {
  const Case c = make_case(token(PatternKind::window, 2, 1, false, 4), {1, 1, 9, 9, 3, 3});
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Tensors t = tensors_for(c, 5);
  GradientResult g = b1_dense_masked_grad(t.q, t.k, t.v, t.dout, pattern, nullptr);
  EXPECT_LE(fd_relative_error(t, 2, g.dv, pattern, nullptr), 1e-6);
  for (double& x : g.dv.data) x *= 1.001;
  EXPECT_GT(fd_relative_error(t, 2, g.dv, pattern, nullptr), 1e-4);
  Tensors shifted = t;
  for (double& x : shifted.dout.data) x += 0.5;
  const GradientResult g2 = b1_dense_masked_grad(shifted.q, shifted.k, shifted.v, shifted.dout,
                                                 pattern, nullptr);
  EXPECT_LE(fd_relative_error(shifted, 0, g2.dq, pattern, nullptr), 1e-6);
  EXPECT_GT(fd_relative_error(t, 0, g2.dq, pattern, nullptr), 1e-4);
}

}  // namespace
}  // namespace sparseattn
