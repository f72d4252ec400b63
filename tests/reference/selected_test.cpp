// Checks contract §3.16 (selected), §3.17 (selected-blocks) and §7.9 (their gradients) on the
// oracles a1_dense_masked and b1_dense_masked_grad: 4-token masks written out by hand, o and
// lse from scores chosen so that every exp is an integer (head_dim 1, q = 1, k_j = log w_j:
// exp(s_j) = w_j), each refusal naming its field, and central finite differences with
// heavy overlap (every query selecting the same keys), the case a cuDNN DSA backward got
// wrong. The mistakes planted by each case are named in its comment.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "core/field.h"
#include "core/seeded_inputs.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "reference/validate.h"
#include "tests/reference/allowed_spec.h"

namespace sparseattn {
namespace {

using testing_inputs::random_tensor;
using Rows = std::vector<std::vector<int64_t>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor<int64_t> table(Shape shape, std::vector<int64_t> values) {
  Tensor<int64_t> t(shape);
  t.data = std::move(values);
  return t;
}

PatternSpec selected(Tensor<int64_t> idx, bool causal = false, Duplicates d = Duplicates::once) {
  PatternSpec s;
  s.kind = PatternKind::selected;
  s.kv_indices = std::move(idx);
  s.causal = causal;
  s.duplicates = d;
  return s;
}

PatternSpec blocks(Tensor<int64_t> idx, int64_t bq, int64_t bk, bool causal = false) {
  PatternSpec s;
  s.kind = PatternKind::selected_blocks;
  s.block_indices = std::move(idx);
  s.block_size_q = bq;
  s.block_size_k = bk;
  s.causal = causal;
  return s;
}

// The allowed keys of every query row of (b, h), ascending.
Rows rows_of(const Pattern& p, int64_t b = 0, int64_t h = 0) {
  Rows out(static_cast<size_t>(p.sizes.seq_len_q));
  for (int64_t i = 0; i < p.sizes.seq_len_q; ++i)
    for (int64_t j = 0; j < p.sizes.seq_len_k; ++j)
      if (p.allowed(b, h, i, j)) out[static_cast<size_t>(i)].push_back(j);
  return out;
}

// The 4-token table of most cases: row 2 is all -1, row 1 lists key 3 twice.
Tensor<int64_t> four() { return table({1, 1, 4, 3}, {2, 0, -1, 3, 3, 1, -1, -1, -1, 0, 1, 2}); }

// ---- §3.16 masks by hand ----------------------------------------------------------------

TEST(Selected, FourTokensByHand) {
  // -1 is an empty slot wherever it stands: read as key 0, row 2 would hold {0}; read as
  // the last key, {3}; a repeat counts once (set semantics).
  const Pattern p = materialize(selected(four()), {1, 1, 4, 4});
  EXPECT_EQ(rows_of(p), (Rows{{0, 2}, {1, 3}, {}, {0, 1, 2}}));
  EXPECT_FALSE(p.counts_repeats);
  EXPECT_EQ(p.multiplicity(0, 0, 1, 3), 1);
}

TEST(Selected, CausalUsesBottomRightPosition) {
  // L_q = L_k = 4: j <= i. Then L_q = 2, L_k = 4: p = i + 2, so query 0 keeps key 1 of
  // {3, 1} and query 1 (p = 3) keeps both; top-left alignment (p = i) would keep {} and {1}.
  EXPECT_EQ(rows_of(materialize(selected(four(), true), {1, 1, 4, 4})),
            (Rows{{0}, {1}, {}, {0, 1, 2}}));
  const Pattern p = materialize(selected(table({1, 1, 2, 2}, {3, 1, 3, 1}), true), {1, 1, 2, 4});
  EXPECT_EQ(rows_of(p), (Rows{{1}, {1, 3}}));
}

TEST(Selected, DuplicatesCountWeighsTheSoftmax) {
  const Pattern once = materialize(selected(four()), {1, 1, 4, 4});
  const Pattern count = materialize(selected(four(), false, Duplicates::count), {1, 1, 4, 4});
  EXPECT_TRUE(count.counts_repeats);
  EXPECT_EQ(count.multiplicity(0, 0, 1, 3), 2);
  EXPECT_EQ(count.multiplicity(0, 0, 1, 1), 1);
  EXPECT_EQ(count.multiplicity(0, 0, 1, 0), 0);
  // exp(s_j) = w = (1, 2, 3, 4), v = (1, 2, 3, 4).
  Tensor<double> q({1, 1, 4, 1}, 1.0), k({1, 1, 4, 1}), v({1, 1, 4, 1});
  k.data = {0.0, std::log(2.0), std::log(3.0), std::log(4.0)};
  v.data = {1.0, 2.0, 3.0, 4.0};
  const double one = 1.0;
  const AttentionResult a = a1_dense_masked(q, k, v, once, &one);
  const AttentionResult c = a1_dense_masked(q, k, v, count, &one);
  // Row 0 {0, 2}: lse = log(1 + 3), o = (1·1 + 3·3) / 4.
  EXPECT_NEAR(a.lse.data[0], std::log(4.0), 1e-15);
  EXPECT_NEAR(a.o.data[0], 2.5, 1e-15);
  // Row 1 {1, 3} once: lse = log(2 + 4), o = (2·2 + 4·4) / 6. Counted, 3 twice:
  // lse = log(2 + 2·4), o = (2·2 + 2·4·4) / 10.
  EXPECT_NEAR(a.lse.data[1], std::log(6.0), 1e-15);
  EXPECT_NEAR(a.o.data[1], 20.0 / 6.0, 1e-14);
  EXPECT_NEAR(c.lse.data[1], std::log(10.0), 1e-15);
  EXPECT_NEAR(c.o.data[1], 3.6, 1e-14);
  // Row 2, all -1: o = 0, lse = -inf exactly (contract §2.3), in both modes.
  EXPECT_EQ(a.o.data[2], 0.0);
  EXPECT_EQ(a.lse.data[2], -kInf);
  EXPECT_EQ(c.lse.data[2], -kInf);
  // Row 3 {0, 1, 2}: lse = log 6, o = (1 + 4 + 9) / 6, the same in both modes.
  EXPECT_NEAR(c.lse.data[3], std::log(6.0), 1e-15);
  EXPECT_NEAR(c.o.data[3], 14.0 / 6.0, 1e-14);
}

TEST(Selected, CausalRemovesARepeatBeforeItCounts) {
  // L_q = 2, L_k = 4 (p = 2, 3). Row 0 lists 3 twice and 0 once; causal keeps only key 0,
  // so its repeat never counts.
  const Pattern p = materialize(selected(table({1, 1, 2, 3}, {3, 3, 0, 1, 1, -1}), true,
                                         Duplicates::count),
                                {1, 1, 2, 4});
  EXPECT_TRUE(p.counts_repeats);  // row 1 still repeats key 1
  EXPECT_EQ(p.multiplicity(0, 0, 0, 3), 0);
  EXPECT_EQ(p.multiplicity(0, 0, 0, 0), 1);
  EXPECT_EQ(p.multiplicity(0, 0, 1, 1), 2);
  const Pattern q = materialize(selected(table({1, 1, 2, 3}, {3, 3, 0, 1, 0, -1}), true,
                                         Duplicates::count),
                                {1, 1, 2, 4});
  EXPECT_FALSE(q.counts_repeats);  // p = i + 2: key 3 beyond both positions
}

TEST(Selected, SharedPerKvHeadAndPerQueryHeadLists) {
  // H_q = 4. H_sel = 2 (per kv head, g = 2): heads 0, 1 read row 0 and heads 2, 3 row 1
  // (⌊h/g⌋); read as h mod 2, head 1 would get row 1.
  const Tensor<int64_t> two = table({1, 2, 1, 1}, {0, 3});
  const Pattern p = materialize(selected(two), {1, 4, 1, 4});
  EXPECT_EQ(rows_of(p, 0, 0), (Rows{{0}}));
  EXPECT_EQ(rows_of(p, 0, 1), (Rows{{0}}));
  EXPECT_EQ(rows_of(p, 0, 2), (Rows{{3}}));
  EXPECT_EQ(rows_of(p, 0, 3), (Rows{{3}}));
  EXPECT_EQ(&p.head(0), &p.head(1));  // a group shares one layout
  // H_sel = 1: every head; H_sel = H_q: each its own.
  const Pattern one = materialize(selected(table({1, 1, 1, 1}, {2})), {1, 4, 1, 4});
  for (int64_t h = 0; h < 4; ++h) EXPECT_EQ(rows_of(one, 0, h), (Rows{{2}}));
  const Pattern each = materialize(selected(table({1, 4, 1, 1}, {3, 2, 1, 0})), {1, 4, 1, 4});
  for (int64_t h = 0; h < 4; ++h) EXPECT_EQ(rows_of(each, 0, h), (Rows{{3 - h}}));
}

TEST(Selected, MoreSlotsThanKeysPaddingAndBatches) {
  // K = 6 > L_k = 4, with repeats and -1; key 1 of batch 1 padded; B_sel = B = 2.
  PatternSpec s = selected(table({2, 1, 1, 6}, {3, 1, 1, -1, 0, 3, 2, 2, 1, -1, -1, -1}));
  s.key_padding_mask = Tensor<uint8_t>({2, 4}, 1);
  s.key_padding_mask->data[4 + 1] = 0;
  const Pattern p = materialize(s, {2, 1, 1, 4});
  EXPECT_EQ(rows_of(p, 0), (Rows{{0, 1, 3}}));
  EXPECT_EQ(rows_of(p, 1), (Rows{{2}}));
  EXPECT_TRUE(p.needs_selection_kernel());  // lists differ by batch element
  EXPECT_FALSE(materialize(selected(four()), {3, 1, 4, 4}).needs_selection_kernel());
}


TEST(Selected, EveryPairAgreesWithTheRestatedDefinition) {
  // tests/reference/allowed_spec.h restates §3.16–§3.17 pair by pair; over tables of random
  // entries (-1 included), H_sel in {1, 2, 4}, L_q below, equal to and above L_k, block sizes
  // with partial last blocks, causal or not, and small storage tiles.
  uint64_t x = 12345;
  auto next = [&x](int64_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(n));
  };
  int64_t pairs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t lq = 1 + next(13), lk = 1 + next(13), hsel = int64_t{1} << next(3);
    const bool blocks = trial % 2 == 1, causal = next(2) == 1;
    const int64_t bq = 1 + next(4), bk = 1 + next(4), kk = 1 + next(6);
    const int64_t rows = blocks ? (lq + bq - 1) / bq : lq, nk = blocks ? (lk + bk - 1) / bk : lk;
    Tensor<int64_t> t({1, hsel, rows, kk});
    for (int64_t& e : t.data) e = next(nk + 1) - 1;
    PatternSpec spec = blocks ? sparseattn::blocks(t, bq, bk, causal) : selected(t, causal);
    spec.tile = 1 + next(5);
    const PatternSizes z{1, 4, lq, lk};
    const Pattern p = materialize(spec, z);
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j, ++pairs)
          ASSERT_EQ(p.allowed(0, h, i, j), testing_spec::allowed_spec(spec, z, p.random_draws, h, i, j))
              << "trial " << trial << " head " << h << " pair " << i << "," << j;
  }
  EXPECT_GT(pairs, 10000);
}

// ---- §3.17 selected-blocks --------------------------------------------------------------

TEST(SelectedBlocks, FourTokensByHand) {
  // b_q = b_k = 2: query block 0 lists key block 1, query block 1 lists block 0 and -1.
  const Tensor<int64_t> t = table({1, 1, 2, 2}, {1, 1, 0, -1});
  EXPECT_EQ(rows_of(materialize(blocks(t, 2, 2), {1, 1, 4, 4})),
            (Rows{{2, 3}, {2, 3}, {0, 1}, {0, 1}}));
  EXPECT_EQ(materialize(blocks(t, 2, 2), {1, 1, 4, 4}).head(0).tile, 2);  // blocks are tiles
  // causal per token: block 1 lies after queries 0, 1.
  EXPECT_EQ(rows_of(materialize(blocks(t, 2, 2, true), {1, 1, 4, 4})),
            (Rows{{}, {}, {0, 1}, {0, 1}}));
}

TEST(SelectedBlocks, UnequalBlocksAndAPartialLastBlock) {
  // b_q = 1 (one list per query, as MoBA), b_k = 3: key blocks [0, 3) and [3, 4). A block
  // size read one too small (2) would give block 1 = {2, 3}; one too large, {}.
  const Tensor<int64_t> t = table({1, 1, 4, 1}, {1, 0, -1, 1});
  EXPECT_EQ(rows_of(materialize(blocks(t, 1, 3), {1, 1, 4, 4})),
            (Rows{{3}, {0, 1, 2}, {}, {3}}));
  EXPECT_EQ(rows_of(materialize(blocks(t, 1, 3, true), {1, 1, 4, 4})),
            (Rows{{}, {0, 1}, {}, {3}}));
}

// ---- refusals (contract §5.1) -----------------------------------------------------------

// The field and the message of the FieldError `f` throws.
std::pair<Field, std::string> refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const FieldError& e) {
    return {e.field(), e.what()};
  }
  ADD_FAILURE() << "not refused";
  return {Field::pattern, ""};
}

TEST(Selected, BadTablesNameTheirField) {
  auto build = [](PatternSpec s, PatternSizes z) { return [=] { materialize(s, z); }; };
  auto r = refusal(build(selected(table({1, 1, 1, 2}, {0, 4})), {1, 1, 1, 4}));
  EXPECT_EQ(r.first, Field::kv_indices);
  EXPECT_NE(r.second.find("kv_indices[0,0,0,1] = 4"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("[0, 4)"), std::string::npos) << r.second;
  r = refusal(build(selected(table({1, 1, 1, 1}, {-2})), {1, 1, 1, 4}));
  EXPECT_EQ(r.first, Field::kv_indices);
  EXPECT_NE(r.second.find("= -2"), std::string::npos) << r.second;
  r = refusal(build(selected(table({1, 1, 4}, {0, 0, 0, 0})), {1, 1, 4, 4}));
  EXPECT_NE(r.second.find("rank 4"), std::string::npos) << r.second;
  r = refusal(build(selected(table({1, 1, 4, 0}, {})), {1, 1, 4, 4}));
  EXPECT_NE(r.second.find("K >= 1"), std::string::npos) << r.second;
  r = refusal(build(selected(table({1, 3, 1, 1}, {0, 0, 0})), {1, 4, 1, 4}));  // H_sel = 3
  EXPECT_NE(r.second.find("H_sel"), std::string::npos) << r.second;
  r = refusal(build(selected(table({2, 1, 1, 1}, {0, 0})), {3, 1, 1, 4}));  // B_sel = 2, B = 3
  EXPECT_NE(r.second.find("B_sel"), std::string::npos) << r.second;
  r = refusal(build(selected(table({1, 1, 3, 1}, {0, 0, 0})), {1, 1, 4, 4}));  // 3 rows, L_q 4
  EXPECT_EQ(r.first, Field::kv_indices);
  r = refusal(build(blocks(table({1, 1, 2, 1}, {2, 0}), 2, 2), {1, 1, 4, 4}));  // n_k = 2
  EXPECT_EQ(r.first, Field::block_indices);
  EXPECT_NE(r.second.find("[0, 2)"), std::string::npos) << r.second;
  EXPECT_EQ(refusal(build(blocks(table({1, 1, 2, 1}, {0, 0}), 0, 2), {1, 1, 4, 4})).first,
            Field::block_size_q);
  EXPECT_EQ(refusal(build(blocks(table({1, 1, 2, 1}, {0, 0}), 2, 0), {1, 1, 4, 4})).first,
            Field::block_size_k);
  PatternSpec w;
  w.kind = PatternKind::window;
  w.kv_indices = table({1, 1, 1, 1}, {0});
  EXPECT_EQ(refusal(build(w, {1, 1, 1, 4})).first, Field::kv_indices);
  PatternSpec d = blocks(table({1, 1, 2, 1}, {0, 0}), 2, 2);
  d.duplicates = Duplicates::count;  // blocks have no count mode
  EXPECT_EQ(refusal(build(d, {1, 1, 4, 4})).first, Field::duplicates);
  PatternSpec s = selected(table({1, 1, 1, 1}, {0}));
  s.block_size_k = 2;
  EXPECT_EQ(refusal(build(s, {1, 1, 1, 4})).first, Field::block_size_k);
  EXPECT_THROW(parse_duplicates("twice"), FieldError);
}

TEST(Selected, PerGroupListsMustMatchTheKvHeads) {
  // H_sel = 2 divides H_q = 4, but k has one head: not {1, H_kv, H_q}.
  const Pattern p = materialize(selected(table({1, 2, 1, 1}, {0, 1})), {1, 4, 1, 4});
  const auto r = refusal([&] { validate_attention({1, 4, 1, 2}, {1, 1, 4, 2}, {1, 1, 4, 2}, p, KvHeads::grouped); });
  EXPECT_EQ(r.first, Field::kv_indices);
  EXPECT_NE(r.second.find("H_kv (1)"), std::string::npos) << r.second;
  EXPECT_NO_THROW(validate_attention({1, 4, 1, 2}, {1, 2, 4, 2}, {1, 2, 4, 2}, p, KvHeads::grouped));
}

// ---- §7.9 gradients ---------------------------------------------------------------------

double loss_of(const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
               const Tensor<double>& dout, const Pattern& p) {
  const AttentionResult r = a1_dense_masked(q, k, v, p, nullptr);
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

struct GradCase {
  const char* name;
  int64_t hsel, bsel;
  bool causal, padding, count;
};

class SelectedGradients : public ::testing::TestWithParam<GradCase> {};

TEST_P(SelectedGradients, OracleMatchesCentralDifferencesUnderHeavyOverlap) {
  const GradCase& c = GetParam();
  const int64_t B = 2, Hq = 4, Hkv = 2, Lq = 6, Lk = 5, D = 3, Dv = 2, K = 4;
  Tensor<double> q = random_tensor({B, Hq, Lq, D}, 41), k = random_tensor({B, Hkv, Lk, D}, 42),
                 v = random_tensor({B, Hkv, Lk, Dv}, 43);
  const Tensor<double> dout = random_tensor({B, Hq, Lq, Dv}, 44);
  // Every query selects keys 1 and 3 (3 twice, as a counted duplicate), one -1 slot; the
  // second batch element (when B_sel = 2) adds key 0 in place of the -1.
  Tensor<int64_t> idx({c.bsel, c.hsel, Lq, K});
  for (int64_t b = 0; b < c.bsel; ++b)
    for (int64_t r = 0; r < c.hsel * Lq; ++r) {
      int64_t* row = idx.ptr() + (b * c.hsel * Lq + r) * K;
      row[0] = 3; row[1] = 1; row[2] = 3; row[3] = b == 0 ? -1 : 0;
    }
  PatternSpec s = selected(idx, c.causal, c.count ? Duplicates::count : Duplicates::once);
  if (c.padding) {  // batch 1: key 3 padded
    s.key_padding_mask = Tensor<uint8_t>({B, Lk}, 1);
    s.key_padding_mask->data[static_cast<size_t>(Lk + 3)] = 0;
  }
  const Pattern p = materialize(s, {B, Hq, Lq, Lk});
  const GradientResult g = b1_dense_masked_grad(q, k, v, dout, p, nullptr);
  auto loss = [&] { return loss_of(q, k, v, dout, p); };
  EXPECT_LE(fd_error(q, g.dq, loss), 1e-6) << "dq";
  EXPECT_LE(fd_error(k, g.dk, loss), 1e-6) << "dk";
  EXPECT_LE(fd_error(v, g.dv, loss), 1e-6) << "dv";
  // A key no query selected (key 2, and 4) has dk = dv = 0 exactly (contract §7.2).
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t d = 0; d < Dv; ++d) {
        EXPECT_EQ(g.dv.data[static_cast<size_t>(((b * Hkv + h) * Lk + 2) * Dv + d)], 0.0);
        EXPECT_EQ(g.dv.data[static_cast<size_t>(((b * Hkv + h) * Lk + 4) * Dv + d)], 0.0);
      }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectedGradients,
    ::testing::Values(GradCase{"shared", 1, 1, false, false, false},
                      GradCase{"per_kv_head", 2, 1, false, false, false},
                      GradCase{"per_query_head", 4, 1, false, false, false},
                      GradCase{"counted", 1, 1, false, false, true},
                      GradCase{"counted_causal_padding", 2, 1, true, true, true},
                      GradCase{"per_batch", 1, 2, true, false, false},
                      GradCase{"per_batch_counted_padding", 4, 2, false, true, true}),
    [](const ::testing::TestParamInfo<GradCase>& info) { return std::string(info.param.name); });

TEST(SelectedGradients, EveryQueryAddsToTheKeysItSelected) {
  // One key (0) selected by every one of L_q = 5 queries, v = 0 except v_0 = 1, q = k = 0:
  // each row's softmax is {key 0: 1}, so dv_0 = Σ_i dO_i exactly (5 terms), dq = dk = 0.
  const int64_t Lq = 5;
  Tensor<double> q({1, 1, Lq, 1}, 0.0), k({1, 1, 2, 1}, 0.0), v({1, 1, 2, 1}, 0.0);
  v.data[0] = 1.0;
  Tensor<double> dout({1, 1, Lq, 1});
  dout.data = {1.0, 2.0, 3.0, 4.0, 5.0};
  const Pattern p = materialize(selected(Tensor<int64_t>({1, 1, Lq, 1}, 0)), {1, 1, Lq, 2});
  const GradientResult g = b1_dense_masked_grad(q, k, v, dout, p, nullptr);
  EXPECT_EQ(g.dv.data[0], 15.0);
  EXPECT_EQ(g.dv.data[1], 0.0);
  for (double x : g.dq.data) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace sparseattn
