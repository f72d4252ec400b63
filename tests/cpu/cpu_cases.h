// Serves the tests of contract §4.3 and §4.6 (the optimized CPU kernels).
// The grid the optimized CPU kernels are checked on: the reference grid
// (tests/reference/grid.h: seq_len 1, smaller than a block, not a multiple of it, head_dim
// 1/3/17, zero random blocks, batch > 1, key padding with fully padded batch elements,
// fully masked rows, seq_len_q != seq_len_k) plus cases sized for the CPU tiling: several
// 64-row query tiles and 64-key chunks with ragged ends, head_dim 64 (and 17, 3),
// head_dim_v != head_dim, blocks larger than a query tile (100), a large scale (scores of
// ±30 stress the online rescaling), and a per-head pattern mixing tile sizes.
#pragma once

#include <vector>

#include "tests/reference/grid.h"

namespace sparseattn::testing_cpu {

using testing_grid::bigbird;
using testing_grid::Case;
using testing_grid::make_case;
using testing_grid::token;

inline std::vector<Case> cpu_cases() {
  using K = PatternKind;
  std::vector<Case> c = testing_grid::cases();
  // dense: ragged tiles, causal with the diagonal crossing chunks, Lq > Lk causal (rows
  // before the first key), large scale.
  c.push_back(make_case(token(K::dense, 0, 1, false, 64), {1, 2, 130, 130, 64, 64}));
  c.push_back(make_case(token(K::dense, 0, 1, true, 64), {2, 1, 100, 150, 17, 17}, true));
  c.push_back(make_case(token(K::dense, 0, 1, true, 64), {1, 1, 150, 70, 3, 3}));
  c.push_back(make_case(token(K::dense, 0, 1, false, 64), {1, 1, 65, 200, 64, 32}, false, 4.0));
  // window: band wider than a chunk, causal, dilation 2 and 3, unequal lengths.
  c.push_back(make_case(token(K::window, 40, 1, false, 64), {1, 2, 300, 300, 64, 64}));
  c.push_back(make_case(token(K::window, 100, 1, true, 64), {3, 1, 257, 257, 17, 17}, true));
  c.push_back(make_case(token(K::window, 20, 3, false, 64), {1, 1, 400, 400, 64, 64}));
  c.push_back(make_case(token(K::window, 7, 2, true, 16), {1, 1, 190, 250, 8, 8}));
  c.push_back(make_case(token(K::window, 70, 2, false, 64), {1, 1, 250, 190, 8, 8}, false, 4.0));
  // seq_len_k - seq_len_q not a multiple of the dilation (61, -61, 41): bottom-right and
  // top-left alignment differ only here.
  c.push_back(make_case(token(K::window, 7, 3, false, 64), {1, 1, 190, 251, 8, 8}));
  c.push_back(make_case(token(K::window, 5, 2, true, 16), {1, 2, 251, 190, 8, 8}));
  // (left, right) windows (contract §3.3) across chunks: k02, k03 and k04 read both reaches.
  using testing_grid::window_pair;
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 64), 90, 3), {1, 2, 300, 300, 32, 32}));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 64), 0, 70), {2, 1, 200, 260, 17, 17}, true));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 64), -1, 5), {1, 1, 190, 150, 8, 8}));
  c.push_back(make_case(window_pair(token(K::window, 0, 3, false, 64), 25, 4), {1, 1, 260, 300, 8, 8}));
  c.push_back(make_case(window_pair(token(K::window, 0, 2, true, 16), 30, -1), {1, 1, 200, 200, 8, 8}));
  c.push_back(make_case(window_pair(token(K::longformer, 0, 1, false, 64, {0, 130}), 40, 2),
                        {1, 2, 250, 250, 16, 16}));
  c.push_back(make_case(window_pair(token(K::longformer, 0, 2, true, 64, {7}), 3, 50),
                        {3, 1, 170, 200, 8, 8}, true));
  // chunked and neighborhood at multi-tile sizes (k06 serves them).
  c.push_back(make_case(testing_grid::chunked(100, false, 64), {1, 2, 300, 300, 32, 32}));
  c.push_back(make_case(testing_grid::chunked(48, true, 64), {2, 1, 200, 250, 17, 17}, true));
  c.push_back(make_case(testing_grid::neighborhood(63, 1, false, 64), {1, 2, 250, 250, 16, 16}));
  c.push_back(make_case(testing_grid::neighborhood(21, 3, true, 64), {1, 1, 200, 260, 8, 8}));
  // longformer: globals at both ends and inside the band, dilated + causal, padding.
  c.push_back(make_case(token(K::longformer, 30, 1, false, 64, {0, 5, 150, 299}),
                        {1, 2, 300, 300, 64, 64}));
  c.push_back(make_case(token(K::longformer, 9, 2, true, 64, {0, 100, 101}),
                        {3, 1, 200, 200, 16, 16}, true));
  c.push_back(make_case(token(K::longformer, 12, 1, false, 16, {40}), {1, 1, 130, 170, 8, 8}));
  c.push_back(make_case(token(K::longformer, 6, 2, true, 64, {3, 90}), {1, 1, 130, 171, 8, 8}));
  // bigbird: block 64 with 3 random blocks (the benchmark's pattern), not a multiple of
  // the block, block 100 > one query tile, block 16 with padding, ETC with g not a
  // multiple of the block.
  c.push_back(make_case(bigbird(64, 3, 1), {1, 2, 600, 600, 64, 64}));
  c.push_back(make_case(bigbird(64, 3, 2), {1, 1, 300, 300, 17, 17}));
  c.push_back(make_case(bigbird(100, 1, 3), {1, 1, 530, 530, 8, 8}));
  c.push_back(make_case(bigbird(16, 2, 4), {3, 1, 200, 200, 64, 64}, true));
  c.push_back(make_case(bigbird(64, 2, 5, 70), {1, 1, 400, 400, 32, 32}));
  // bigbird over a whole number of blocks (12 of 16), batch 3 with padding: HF's listing
  // (k07) serves it too.
  c.push_back(make_case(bigbird(16, 2, 4), {3, 2, 192, 192, 32, 16}, true));
  // random, explicit and per-head at multi-tile sizes.
  c.push_back(make_case(token(K::random, 10, 1, false, 64, {3}, 8, 9), {1, 2, 200, 200, 64, 64}));
  c.push_back(make_case(testing_grid::explicit_mask(testing_grid::random_mask({150, 150}, 12, 77), 16),
                        {1, 2, 150, 150, 17, 17}));
  {
    PatternSpec s;
    s.kind = K::per_head;
    s.per_head = {token(K::window, 5, 1, false, 64), token(K::dense, 0, 1, true, 16),
                  bigbird(32, 1, 7)};
    c.push_back(make_case(s, {1, 3, 150, 150, 8, 8}));
  }
  return c;
}

}  // namespace sparseattn::testing_cpu
