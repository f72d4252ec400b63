// Checks contract §3.18 (selection): topk, dsa, moba and nsa against indices computed by
// hand on 4- to 8-token cases, ties included (the lower index wins), -1 padding, causal
// candidates, and each refusal naming its argument. The mistake each case would catch is
// named in its comment.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "pattern/select.h"

namespace sparseattn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor<double> t(Shape shape, std::vector<double> values) {
  Tensor<double> x(shape);
  x.data = std::move(values);
  return x;
}

std::vector<int64_t> row(const Tensor<int64_t>& x, int64_t r) {
  const int64_t k = x.shape.back();
  return {x.data.begin() + r * k, x.data.begin() + (r + 1) * k};
}

using V = std::vector<int64_t>;

TEST(SelectTopk, RanksWithTiesToTheLowerIndexAndPads) {
  // Row 0: scores (1, 3, 3, 2): 1 and 2 tie, 1 first (a stable sort by index after the
  // score; a "last wins" tie rule gives 2, 1). K = 5 > N pads with -1.
  const Tensor<double> s = t({1, 1, 2, 4}, {1, 3, 3, 2, -kInf, 5, 5, 5});
  const Tensor<int64_t> a = select_topk(s, 5, false);
  EXPECT_EQ(a.shape, (Shape{1, 1, 2, 5}));
  EXPECT_EQ(row(a, 0), (V{1, 2, 3, 0, -1}));
  EXPECT_EQ(row(a, 1), (V{1, 2, 3, -1, -1}));  // -inf is no candidate
  // Causal, L_q = 2 < N = 4: row i keeps j <= i + 2 (bottom-right); top-left would keep j <= i.
  const Tensor<int64_t> c = select_topk(s, 3, true);
  EXPECT_EQ(row(c, 0), (V{1, 2, 0}));
  EXPECT_EQ(row(c, 1), (V{1, 2, 3}));
}

TEST(SelectDsa, LightningIndexerByHand) {
  // d_I = 1, H_I = 2, q^I = (1, -1) for every t, w = (1, 2), k^I = (1, -1, 2, 0.5):
  // I[t, s] = ReLU(k_s) + 2·ReLU(-k_s) = (1, 2, 2, 0.5). Without the ReLU (k_s - 2 k_s =
  // -k_s) row 3 would pick {1, 3}; with it, 1 and 2 tie at 2 and 1 comes first.
  const Tensor<double> q = t({1, 4, 2, 1}, {1, -1, 1, -1, 1, -1, 1, -1});
  const Tensor<double> k = t({1, 4, 1}, {1, -1, 2, 0.5});
  const Tensor<double> w = t({1, 4, 2}, {1, 2, 1, 2, 1, 2, 1, 2});
  const Tensor<double> scores = dsa_index_scores(q, k, w);
  EXPECT_EQ(scores.data[12], 1.0);
  EXPECT_EQ(scores.data[13], 2.0);
  EXPECT_EQ(scores.data[15], 0.5);
  EXPECT_EQ(scores.data[1], -kInf);  // causal: t = 0 sees key 0 only
  const Tensor<int64_t> a = select_dsa(q, k, w, 2);
  EXPECT_EQ(a.shape, (Shape{1, 1, 4, 2}));
  EXPECT_EQ(row(a, 0), (V{0, -1}));
  EXPECT_EQ(row(a, 1), (V{1, 0}));
  EXPECT_EQ(row(a, 2), (V{1, 2}));
  EXPECT_EQ(row(a, 3), (V{1, 2}));
}

TEST(SelectMoba, OwnChunkFirstThenTheBestPastGates) {
  // C = 2: chunks {0,1}, {2,3}, {4,5}; k = (1, 3, -1, -1, 0, 0): means 2, -1, 0.
  // q = (1, 1, 1, 1, -1, 1). Query 5 (own chunk 2): gates 2, -1 -> chunk 0. Query 4 (q = -1):
  // gates -2, 1 -> chunk 1. Query 2: only chunk 0 is past. Query 0: nothing past.
  // A future chunk (2 for query 3) is never a candidate. (Past chunks are always whole, so a
  // gate on the chunk's sum would rank them as the mean does: no case can tell them apart.)
  const Tensor<double> q = t({1, 1, 6, 1}, {1, 1, 1, 1, -1, 1});
  const Tensor<double> k = t({1, 1, 6, 1}, {1, 3, -1, -1, 0, 0});
  const Tensor<int64_t> a = select_moba(q, k, 2, 2);
  EXPECT_EQ(row(a, 0), (V{0, -1}));
  EXPECT_EQ(row(a, 1), (V{0, -1}));
  EXPECT_EQ(row(a, 2), (V{1, 0}));
  EXPECT_EQ(row(a, 3), (V{1, 0}));
  EXPECT_EQ(row(a, 4), (V{2, 1}));
  EXPECT_EQ(row(a, 5), (V{2, 0}));
  EXPECT_EQ(row(select_moba(q, k, 2, 3), 5), (V{2, 0, 1}));
  // C = 4 with L_k = 6: chunk 1 = {4, 5} is partial; query 5 sits in it, chunk 0 is past.
  const Tensor<double> ones = t({1, 1, 6, 1}, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(row(select_moba(ones, ones, 4, 2), 5), (V{1, 0}));
  // Ties between past chunks go to the lower chunk: C = 2, means 1, 1, 1.
  EXPECT_EQ(row(select_moba(ones, ones, 2, 2), 5), (V{2, 0}));
  // L_q > L_k: query 0 sits before the first key and selects nothing.
  const Tensor<int64_t> b = select_moba(t({1, 1, 3, 1}, {1, 1, 1}), t({1, 1, 2, 1}, {1, 1}), 1, 2);
  EXPECT_EQ(row(b, 0), (V{-1, -1}));
  EXPECT_EQ(row(b, 2), (V{1, 0}));
}

TEST(SelectMoba, GroupedHeadsReadTheirKvHead) {
  // H_q = 2, H_kv = 1: both heads gate against kv head 0's means (2, -1 for C = 2).
  const Tensor<double> q = t({1, 2, 1, 1}, {1, -1});
  const Tensor<double> k = t({1, 1, 6, 1}, {1, 3, -1, -1, 0, 0});
  const Tensor<int64_t> a = select_moba(q, k, 2, 2);
  EXPECT_EQ(row(a, 0), (V{2, 0}));
  EXPECT_EQ(row(a, 1), (V{2, 1}));
}

TEST(SelectNsa, ForcedInitialAndLocalBlocksThenScores) {
  // L_q = L_k = 8, b_k = 2 (4 blocks), n = 3, f = 1, l = 1. Query 7 (block 3): forced {0, 3},
  // then the best of {1, 2} by score (9, 1, 5, 7) -> 2. Query 3 (block 1): forced {0, 1}, no
  // other causal block. Query 0: block 0 is initial and local, counted once.
  const Tensor<double> s = t({1, 1, 8, 4}, {9, 1, 5, 7, 9, 1, 5, 7, 9, 1, 5, 7, 9, 1, 5, 7,
                                            9, 1, 5, 7, 9, 1, 5, 7, 9, 1, 5, 7, 9, 1, 5, 7});
  const Tensor<int64_t> a = select_nsa(s, 2, 3, 1, 1, 8);
  EXPECT_EQ(row(a, 7), (V{0, 3, 2}));
  EXPECT_EQ(row(a, 3), (V{0, 1, -1}));
  EXPECT_EQ(row(a, 0), (V{0, -1, -1}));
  // Two local blocks end at the query's block: {2, 3} with the initial {0}.
  EXPECT_EQ(row(select_nsa(s, 2, 3, 1, 2, 8), 7), (V{0, 2, 3}));
  // Ties among the others go to the lower block.
  Tensor<double> tie = s;
  for (int64_t i = 0; i < 8; ++i) {
    tie.data[static_cast<size_t>(i * 4 + 1)] = 4;
    tie.data[static_cast<size_t>(i * 4 + 2)] = 4;
  }
  EXPECT_EQ(row(select_nsa(tie, 2, 3, 1, 1, 8), 7), (V{0, 3, 1}));
  // L_q = 2 < L_k = 8: query 0 sits at p = 6 (block 3), bottom-right.
  const Tensor<double> s2 = t({1, 1, 2, 4}, {9, 1, 5, 7, 9, 1, 5, 7});
  EXPECT_EQ(row(select_nsa(s2, 2, 3, 1, 1, 8), 0), (V{0, 3, 2}));
}

// The argument an InvalidArgument names.
std::string argument_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.argument();
  }
  return "not refused";
}

TEST(Select, BadInputNamesTheArgument) {
  const Tensor<double> s = t({1, 1, 1, 4}, {1, 2, 3, 4});
  EXPECT_EQ(argument_of([&] { select_topk(s, 0, false); }), "top_k");
  EXPECT_EQ(argument_of([&] { select_topk(t({1, 4}, {1, 2, 3, 4}), 1, false); }), "scores shape");
  EXPECT_EQ(argument_of([&] { select_topk(t({1, 1, 1, 2}, {1, std::nan("")}), 1, false); }),
            "scores[flat 1]");
  EXPECT_EQ(argument_of([&] { select_topk(t({1, 1, 1, 2}, {1, kInf}), 1, false); }), "scores[flat 1]");
  EXPECT_EQ(argument_of([&] { select_nsa(s, 2, 1, 1, 1, 8); }), "num_selected");
  EXPECT_EQ(argument_of([&] { select_nsa(s, 3, 3, 1, 1, 8); }), "scores shape");  // 3 blocks
  EXPECT_EQ(argument_of([&] { select_nsa(s, 0, 3, 1, 1, 8); }), "block_size_k");
  EXPECT_EQ(argument_of([&] { select_nsa(s, 2, 3, -1, 1, 8); }), "num_initial");
  const Tensor<double> q = t({1, 1, 2, 1}, {1, 1});
  EXPECT_EQ(argument_of([&] { select_moba(q, t({1, 1, 2, 2}, {1, 1, 1, 1}), 1, 1); }), "k shape");
  EXPECT_EQ(argument_of([&] { select_moba(q, q, 0, 1); }), "chunk_size");
  EXPECT_EQ(argument_of([&] { select_moba(q, q, 1, 0); }), "top_k");
  const Tensor<double> iq = t({1, 2, 1, 1}, {1, 1});
  EXPECT_EQ(argument_of([&] { select_dsa(iq, t({1, 2, 2}, {1, 1, 1, 1}), t({1, 2, 1}, {1, 1}), 1); }),
            "index_k shape");
  EXPECT_EQ(argument_of([&] { select_dsa(iq, t({1, 2, 1}, {1, 1}), t({1, 1, 1}, {1}), 1); }),
            "weights shape");
}

}  // namespace
}  // namespace sparseattn
