// Checks contract §6.3 (the fast reachability engine equals the definition, exactly).
// g1 (bitset, tiles, OpenMP, block level) must equal g0 (the definition) exactly: every
// hop distance, every count, on a grid with awkward shapes: seq_len not a
// multiple of the tile or block, smaller than one tile, tile 1, per-head unions,
// non-uniform stacks, causal, dilation, global tokens, random keys and blocks.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>

#include "core/error.h"

#include "graph/reach.h"
#include "graph_test_util.h"

namespace sparseattn::graph {
namespace {

using namespace testing;

struct Case {
  std::string name;
  LayerStack stack;
  int64_t token;
};

std::vector<Case> grid() {
  std::vector<Case> cases;
  auto add = [&](std::string name, LayerStack stack, int64_t token) {
    cases.push_back({std::move(name), std::move(stack), token});
  };
  for (int64_t n : {1, 3, 63, 64, 65, 130}) {
    const std::string at = " seq_len=" + std::to_string(n);
    add("window w=2" + at, stack_of(window_spec(2), n, 3), n / 2);
    add("window w=1 tile=1" + at, stack_of(window_spec(1, 1, false, 1), n, 2), n - 1);
    add("window w=3 d=2 tile=16" + at, stack_of(window_spec(3, 2, false, 16), n, 2), 0);
    add("causal window w=2 tile=8" + at, stack_of(window_spec(2, 1, true, 8), n, 4), n / 3);
    add("longformer w=1 global={0,n/2}" + at, stack_of(longformer_spec(1, {0, n / 2}), n, 2), n / 2);
    add("random w=1 r=2 seed=3 tile=16" + at, stack_of(random_spec(1, 2, 3, 16), n, 2, 2), n / 2);
    add("bigbird b=8 r=1 heads=3" + at, stack_of(bigbird_spec(8, 1, 5), n, 2, 3), n / 2);
    add("bigbird b=16 r=0" + at, stack_of(bigbird_spec(16, 0, 0), n, 1), -1);
    add("per-head dilated d=3 + window 1" + at,
        uniform_stack(make(per_head_spec({window_spec(2, 3), window_spec(1)}), n), 3), n / 2);
    // Longformer's stack of growing windows (non-uniform; the last layer repeats).
    LayerStack growing;
    for (int64_t w : {1, 2, 4}) growing.layers.push_back(make(window_spec(w, 1, false, 32), n));
    add("stack windows 1,2,4" + at, growing, n / 2);
    // Dilation on layer 2 only.
    LayerStack mixed;
    mixed.layers = {make(window_spec(1), n), make(window_spec(2, 4), n), make(window_spec(1), n)};
    add("stack window 1, dilated 2x4, window 1" + at, mixed, 1 % n);
  }
  return cases;
}

TEST(ReachAgree, G1EqualsG0OnEveryGridCase) {
  for (const Case& c : grid()) {
    SCOPED_TRACE(c.name + " token=" + std::to_string(c.token));
    std::vector<int32_t> d0, d1, d1_token;
    const ReachSummary s0 = g0_reach_reference(c.stack, c.token, &d0);
    const ReachSummary s1 = g1_reach_bitset(c.stack, c.token, LevelChoice::automatic, &d1);
    const ReachSummary s1_token = g1_reach_bitset(c.stack, c.token, LevelChoice::token, &d1_token);
    EXPECT_EQ(d0, d1);
    EXPECT_EQ(d0, d1_token);
    EXPECT_EQ(s0.hops, s1.hops);
    EXPECT_EQ(s0.never, s1.never);
    EXPECT_EQ(s0.coverage, s1.coverage);
    EXPECT_EQ(s0.span, s1.span);
    EXPECT_EQ(s0, s1_token);
  }
}

// Block level is chosen exactly when every tile of the union is full.
TEST(ReachAgree, BlockLevelOnlyForBlockPatterns) {
  EXPECT_EQ(g1_reach_bitset(stack_of(bigbird_spec(16, 2, 1), 200), -1).level, Level::block);
  EXPECT_EQ(g1_reach_bitset(stack_of(window_spec(3), 200), -1).level, Level::token);
  EXPECT_THROW(g1_reach_bitset(stack_of(window_spec(3), 200), -1, LevelChoice::block),
               InvalidArgument);
}

// contract §4: identical results for any number of OpenMP threads.
TEST(ReachAgree, SameResultForOneAndManyThreads) {
  const LayerStack stack = stack_of(random_spec(1, 2, 9), 1000, 3);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const ReachSummary one = g1_reach_bitset(stack, 17);
  omp_set_num_threads(4);
  const ReachSummary four = g1_reach_bitset(stack, 17);
  omp_set_num_threads(before);
  EXPECT_EQ(one, four);
}

}  // namespace
}  // namespace sparseattn::graph
