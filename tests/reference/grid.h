// The grid of configurations every reference test walks: each pattern kind of contract §3 at
// awkward shapes: seq_len 1, seq_len not a multiple of the block and smaller
// than one block, head_dim 1 and not a power of two, head_dim_v != head_dim, zero random
// blocks, one head, batch > 1, seq_len_q != seq_len_k for token patterns, key padding
// (including a batch element whose every token is padding), tiles 1, 5 and 64.
// A case's name spells out its whole configuration, so a failure line is a recipe.
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "pattern/pattern.h"
#include "core/seeded_inputs.h"

namespace sparseattn::testing_grid {

struct Case {
  std::string name;
  PatternSpec spec;
  PatternSizes sizes;
  int64_t head_dim = 8;
  int64_t head_dim_v = 8;
  double scale = NAN;  // NaN: the default 1/sqrt(head_dim)
};

// Google Test prints a failing parameter with this: the case's name, not its bytes.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// "w2" for the symmetric window, "L3R0" for the (left, right) pair ("Lm1" for -1).
inline std::string reach_tag(const PatternSpec& s) {
  auto n = [](int64_t x) { return x < 0 ? "m" + std::to_string(-x) : std::to_string(x); };
  if (!s.window_left) return "w" + n(s.window);
  return "L" + n(*s.window_left) + "R" + n(*s.window_right);
}

// Identifier-safe description of the spec's parameters that matter for its kind.
inline std::string spec_tag(const PatternSpec& s) {
  auto n = [](int64_t x) { return std::to_string(x); };
  std::string t;
  switch (s.kind) {
    case PatternKind::dense: t = "dense"; break;
    case PatternKind::window: t = "window_" + reach_tag(s) + "_d" + n(s.dilation); break;
    case PatternKind::longformer:
    case PatternKind::random: {
      t = (s.kind == PatternKind::random ? "random_r" + n(s.num_random) + "_" : "longformer_") +
          reach_tag(s) + "_d" + n(s.dilation) + "_G";
      for (int64_t g : s.global) t += "x" + n(g);
      if (s.kind == PatternKind::random) t += "_seed" + std::to_string(s.seed);
      break;
    }
    case PatternKind::bigbird:
      t = "bigbird_b" + n(s.block_size) + "_r" + n(s.num_random_blocks) +
          (s.random_table ? "_table" : "_seed" + std::to_string(s.seed));
      break;
    case PatternKind::bigbird_etc:
      t = "bigbird_etc_g" + n(s.num_global_tokens) + "_b" + n(s.block_size) + "_r" +
          n(s.num_random_blocks) + "_seed" + std::to_string(s.seed);
      break;
    case PatternKind::hierarchical:
      t = "hierarchical_segments";
      for (size_t i = 0; i < s.segment_ids.size(); ++i)
        if (i == 0 || s.segment_ids[i] != s.segment_ids[i - 1]) t += "x" + n(static_cast<int64_t>(i));
      break;
    case PatternKind::explicit_mask: t = "explicit_rank" + n(s.mask->rank()); break;
    case PatternKind::chunked: t = "chunked_C" + n(*s.chunk_size); break;
    case PatternKind::neighborhood:
      t = "neighborhood_K" + n(*s.kernel_size) + "_d" + n(s.dilation);
      break;
    case PatternKind::selected:
      t = "selected_K" + n(s.kv_indices->dim(3)) + (s.duplicates == Duplicates::count ? "_count" : "");
      break;
    case PatternKind::selected_blocks:
      t = "selected_blocks_q" + n(*s.block_size_q) + "_k" + n(*s.block_size_k);
      break;
    case PatternKind::per_head:
      t = "perhead";
      for (const PatternSpec& h : s.per_head) t += "__" + spec_tag(h);
      break;
  }
  if (s.causal && (s.kind == PatternKind::dense || s.kind == PatternKind::window ||
                   s.kind == PatternKind::longformer || s.kind == PatternKind::random ||
                   s.kind == PatternKind::chunked || s.kind == PatternKind::neighborhood))
    t += "_causal";
  return t;
}

inline std::string case_name(const Case& c) {
  auto n = [](int64_t x) { return std::to_string(x); };
  std::string name = spec_tag(c.spec) + "_B" + n(c.sizes.batch) + "_H" + n(c.sizes.num_heads) +
                     "_Lq" + n(c.sizes.seq_len_q) + "_Lk" + n(c.sizes.seq_len_k) + "_D" +
                     n(c.head_dim) + "_Dv" + n(c.head_dim_v);
  if (c.spec.kind != PatternKind::bigbird && c.spec.kind != PatternKind::bigbird_etc)
    name += "_tile" + n(c.spec.tile);
  if (c.spec.key_padding_mask) name += "_keypadding";
  if (!std::isnan(c.scale)) name += "_scale" + n(static_cast<int64_t>(std::lround(c.scale * 100))) + "em2";
  return name;
}

// Key padding [batch, seq_len_k]: batch 0 random (about one key in four padded), batch 1
// right-padded (the last 3 keys), batch 2 entirely padded (every row fully masked).
inline Tensor<uint8_t> key_padding(int64_t batch, int64_t seq_len_k, uint64_t seed) {
  Tensor<uint8_t> m({batch, seq_len_k}, 1);
  testing_inputs::TestRng rng(seed);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < seq_len_k; ++j) {
      uint8_t& x = m.data[b * seq_len_k + j];
      if (b % 3 == 0) x = rng.below(4) != 0;
      if (b % 3 == 1) x = j < seq_len_k - 3;
      if (b % 3 == 2) x = 0;
    }
  return m;
}

// A random 0/1 mask of `shape` (about half ones) whose row `empty_row` of every slice is
// all zeros, so fully masked rows are part of the case.
inline Tensor<uint8_t> random_mask(const Shape& shape, uint64_t seed, int64_t empty_row) {
  Tensor<uint8_t> m(shape, 0);
  testing_inputs::TestRng rng(seed);
  const int64_t cols = shape.back(), rows = shape[shape.size() - 2];
  for (int64_t e = 0; e < m.numel(); ++e)
    m.data[e] = ((e / cols) % rows == empty_row) ? 0 : static_cast<uint8_t>(rng.below(2));
  return m;
}

struct Sizes {
  int64_t batch, num_heads, seq_len_q, seq_len_k, head_dim, head_dim_v;
};

inline Case make_case(PatternSpec spec, Sizes z, bool padded = false, double scale = NAN) {
  Case c;
  c.sizes = PatternSizes{z.batch, z.num_heads, z.seq_len_q, z.seq_len_k};
  c.head_dim = z.head_dim;
  c.head_dim_v = z.head_dim_v;
  c.scale = scale;
  if (padded) spec.key_padding_mask = key_padding(z.batch, z.seq_len_k, 977 + z.seq_len_k);
  c.spec = std::move(spec);
  c.name = case_name(c);
  return c;
}

inline PatternSpec token(PatternKind kind, int64_t window, int64_t dilation, bool causal,
                         int64_t tile, std::vector<int64_t> global = {}, int64_t num_random = 0,
                         uint64_t seed = 0) {
  PatternSpec s;
  s.kind = kind;
  s.window = window;
  s.dilation = dilation;
  s.causal = causal;
  s.tile = tile;
  s.global = std::move(global);
  s.num_random = num_random;
  s.seed = seed;
  return s;
}

// The (left, right) window of a window-like kind (contract §3.3).
inline PatternSpec window_pair(PatternSpec s, int64_t left, int64_t right) {
  s.window = 0;
  s.window_left = left;
  s.window_right = right;
  return s;
}

inline PatternSpec chunked(int64_t chunk_size, bool causal, int64_t tile) {
  PatternSpec s;
  s.kind = PatternKind::chunked;
  s.chunk_size = chunk_size;
  s.causal = causal;
  s.tile = tile;
  return s;
}

inline PatternSpec neighborhood(int64_t kernel_size, int64_t dilation, bool causal, int64_t tile) {
  PatternSpec s;
  s.kind = PatternKind::neighborhood;
  s.kernel_size = kernel_size;
  s.dilation = dilation;
  s.causal = causal;
  s.tile = tile;
  return s;
}

inline PatternSpec bigbird(int64_t block_size, int64_t r, uint64_t seed, int64_t g = -1) {
  PatternSpec s;
  s.kind = g < 0 ? PatternKind::bigbird : PatternKind::bigbird_etc;
  s.block_size = block_size;
  s.num_random_blocks = r;
  s.num_global_tokens = g < 0 ? 0 : g;
  s.seed = seed;
  return s;
}

inline PatternSpec hierarchical(std::vector<int64_t> segment_ids, int64_t tile) {
  PatternSpec s;
  s.kind = PatternKind::hierarchical;
  s.segment_ids = std::move(segment_ids);
  s.tile = tile;
  return s;
}

inline PatternSpec explicit_mask(Tensor<uint8_t> mask, int64_t tile) {
  PatternSpec s;
  s.kind = PatternKind::explicit_mask;
  s.mask = std::move(mask);
  s.tile = tile;
  return s;
}

// The grid. Sizes: {batch, num_heads, seq_len_q, seq_len_k, head_dim, head_dim_v}.
inline std::vector<Case> cases() {
  using K = PatternKind;
  std::vector<Case> c;
  // dense: seq_len 1, head_dim 1; seq_len_q != seq_len_k both ways; causal rows before
  // the first key (seq_len_q > seq_len_k) are fully masked.
  c.push_back(make_case(token(K::dense, 0, 1, false, 64), {1, 1, 1, 1, 1, 1}));
  c.push_back(make_case(token(K::dense, 0, 1, false, 5), {2, 1, 7, 7, 3, 3}, false, 0.7));
  c.push_back(make_case(token(K::dense, 0, 1, false, 5), {1, 2, 5, 9, 17, 5}));
  c.push_back(make_case(token(K::dense, 0, 1, false, 1), {3, 2, 9, 5, 4, 4}, true));
  c.push_back(make_case(token(K::dense, 0, 1, true, 5), {1, 1, 13, 13, 3, 3}));
  c.push_back(make_case(token(K::dense, 0, 1, true, 5), {1, 2, 9, 5, 3, 2}));
  c.push_back(make_case(token(K::dense, 0, 1, true, 64), {3, 1, 5, 9, 6, 6}, true));
  // window: w = 0 (only itself), dilation, causal, clipping at both ends, unequal lengths,
  // and w >= n (full coverage).
  c.push_back(make_case(token(K::window, 0, 1, false, 5), {1, 1, 7, 7, 2, 2}));
  c.push_back(make_case(token(K::window, 2, 1, false, 5), {3, 3, 37, 37, 17, 5}, true));
  c.push_back(make_case(token(K::window, 2, 3, true, 64), {1, 1, 37, 37, 3, 3}));
  c.push_back(make_case(token(K::window, 3, 2, false, 5), {1, 2, 11, 29, 5, 7}));
  c.push_back(make_case(token(K::window, 3, 2, true, 1), {1, 1, 29, 11, 1, 1}));
  c.push_back(make_case(token(K::window, 1, 4, false, 1), {2, 1, 1, 1, 3, 3}));
  c.push_back(make_case(token(K::window, 100, 1, false, 64), {1, 1, 23, 23, 4, 4}));
  // dilation with seq_len_k - seq_len_q NOT a multiple of it (there bottom-right and
  // top-left alignment differ): offsets 1, 11, -11.
  c.push_back(make_case(token(K::window, 1, 2, false, 1), {1, 1, 1, 2, 3, 3}));
  c.push_back(make_case(token(K::window, 2, 3, false, 5), {1, 1, 10, 21, 3, 3}));
  c.push_back(make_case(token(K::window, 3, 2, true, 64), {1, 2, 20, 9, 4, 2}));
  // parameters beyond the sequence (contract §3): the clamped pattern's result.
  c.push_back(make_case(token(K::window, 4611686018427387904, 1, true, 5), {1, 1, 9, 13, 3, 3}));
  c.push_back(make_case(token(K::window, 2, 4611686018427387904, false, 5), {1, 1, 9, 13, 3, 3}));
  // (left, right) windows (contract §3.3): asymmetric both ways, one side unbounded, both
  // unbounded (dense), causal (right cut to 0), dilation, unequal lengths, beyond the sequence.
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 5), 3, 1), {1, 1, 17, 17, 3, 3}));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 64), 0, 4), {2, 2, 13, 13, 4, 4}, true));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 1), -1, 0), {1, 1, 9, 9, 3, 3}));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 5), 2, -1), {1, 1, 7, 12, 3, 2}));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 5), -1, -1), {1, 1, 9, 6, 3, 3}));
  c.push_back(make_case(window_pair(token(K::window, 0, 2, true, 5), 3, 5), {1, 2, 19, 19, 3, 3}));
  c.push_back(make_case(window_pair(token(K::window, 0, 3, false, 1), 1, 2), {1, 1, 10, 21, 3, 3}));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, true, 64), 2, 7), {3, 1, 12, 8, 3, 3}, true));
  c.push_back(make_case(window_pair(token(K::window, 0, 1, false, 5), 4611686018427387904, 0),
                        {1, 1, 9, 13, 3, 3}));
  c.push_back(make_case(window_pair(token(K::longformer, 0, 1, false, 5, {0, 9}), 1, 3),
                        {2, 2, 15, 15, 4, 4}, true));
  c.push_back(make_case(window_pair(token(K::longformer, 0, 2, true, 1, {4}), 4, 0), {1, 1, 8, 13, 3, 3}));
  c.push_back(make_case(window_pair(token(K::random, 0, 1, false, 5, {2}, 2, 5), 0, 2), {1, 2, 14, 14, 3, 3}));
  c.push_back(make_case(window_pair(token(K::random, 0, 1, true, 64, {}, 3, 9), -1, 1), {1, 1, 11, 16, 3, 3}));
  // chunked (contract §3.14): chunk 1, a partial last chunk, causal, L_q != L_k both ways
  // (queries before the first key attend nothing), a chunk beyond the sequence, padding.
  c.push_back(make_case(chunked(1, false, 5), {1, 1, 6, 6, 3, 3}));
  c.push_back(make_case(chunked(4, false, 5), {2, 2, 18, 18, 4, 3}, true));
  c.push_back(make_case(chunked(3, true, 1), {1, 1, 11, 11, 3, 3}));
  c.push_back(make_case(chunked(5, false, 64), {1, 2, 7, 19, 5, 5}));
  c.push_back(make_case(chunked(4, true, 5), {3, 1, 9, 14, 3, 3}, true));
  c.push_back(make_case(chunked(3, false, 5), {1, 1, 13, 6, 3, 3}));
  c.push_back(make_case(chunked(2, true, 1), {1, 2, 12, 7, 2, 4}));
  c.push_back(make_case(chunked(4611686018427387904, false, 5), {1, 1, 9, 12, 3, 3}));
  c.push_back(make_case(chunked(4611686018427387904, true, 64), {1, 1, 10, 6, 3, 3}));
  // neighborhood (contract §3.15): K = 1, K = L_k (every key), interior and both ends,
  // dilation with classes of unequal length, causal, L_q < L_k, padding.
  c.push_back(make_case(neighborhood(1, 1, false, 5), {1, 1, 6, 6, 3, 3}));
  c.push_back(make_case(neighborhood(3, 1, false, 5), {2, 2, 17, 17, 4, 4}, true));
  c.push_back(make_case(neighborhood(7, 1, false, 64), {1, 1, 7, 7, 3, 3}));
  c.push_back(make_case(neighborhood(5, 2, false, 1), {1, 1, 13, 13, 3, 3}));
  c.push_back(make_case(neighborhood(3, 3, false, 5), {1, 2, 20, 20, 3, 5}));
  c.push_back(make_case(neighborhood(5, 1, true, 5), {3, 1, 16, 16, 3, 3}, true));
  c.push_back(make_case(neighborhood(3, 2, true, 1), {1, 1, 14, 14, 3, 3}));
  c.push_back(make_case(neighborhood(3, 1, false, 5), {1, 1, 6, 15, 3, 3}));
  c.push_back(make_case(neighborhood(5, 3, false, 64), {1, 1, 9, 23, 4, 2}));
  c.push_back(make_case(neighborhood(3, 2, true, 5), {2, 1, 7, 12, 3, 3}, true));
  // longformer: global rows and columns, with causal, with unequal lengths.
  c.push_back(make_case(token(K::longformer, 2, 1, false, 5, {0, 7, 22}), {3, 2, 23, 23, 8, 8}, true));
  c.push_back(make_case(token(K::longformer, 1, 2, true, 1, {3}), {1, 1, 19, 19, 3, 3}));
  c.push_back(make_case(token(K::longformer, 1, 1, false, 5, {0, 17}), {1, 1, 6, 20, 3, 3}));
  c.push_back(make_case(token(K::longformer, 3, 1, true, 64, {2, 2, 9}), {1, 2, 9, 14, 3, 4}));
  c.push_back(make_case(token(K::longformer, 1, 3, false, 5, {4}), {1, 1, 8, 13, 3, 3}));
  // random: zero random keys; several heads; shortfall under causal at the first rows.
  c.push_back(make_case(token(K::random, 1, 1, false, 5, {}, 0, 1), {1, 1, 17, 17, 3, 3}));
  c.push_back(make_case(token(K::random, 1, 1, false, 5, {2}, 3, 7), {1, 3, 33, 33, 8, 8}));
  c.push_back(make_case(token(K::random, 0, 1, true, 64, {}, 5, 3), {3, 2, 20, 20, 3, 3}, true));
  c.push_back(make_case(token(K::random, 1, 2, false, 1, {0}, 2, 11), {1, 2, 7, 15, 5, 3}));
  c.push_back(make_case(token(K::random, 1, 2, false, 5, {}, 2, 13), {1, 1, 6, 11, 3, 3}));
  // bigbird ITC: one short block, fewer than 3 blocks (all global), not a multiple of
  // the block, zero random blocks, block 1, several heads, key padding.
  c.push_back(make_case(bigbird(4, 2, 0), {1, 1, 1, 1, 3, 3}));
  c.push_back(make_case(bigbird(4, 1, 0), {1, 1, 3, 3, 1, 1}));
  c.push_back(make_case(bigbird(4, 0, 0), {1, 1, 13, 13, 3, 3}));
  c.push_back(make_case(bigbird(4, 2, 5), {3, 3, 30, 30, 8, 5}, true));
  c.push_back(make_case(bigbird(8, 3, 9), {1, 2, 64, 64, 17, 17}));
  c.push_back(make_case(bigbird(1, 2, 4), {1, 1, 9, 9, 3, 3}));
  c.push_back(make_case(bigbird(5, 3, 2), {2, 1, 27, 27, 6, 6}));
  c.push_back(make_case(bigbird(4611686018427387904, 2, 1), {1, 1, 9, 9, 3, 3}));
  c.push_back(make_case(bigbird(3, 4611686018427387904, 1), {1, 2, 14, 14, 3, 3}));
  // bigbird ETC: no global tokens, global tokens not a multiple of the block, all global.
  c.push_back(make_case(bigbird(4, 1, 0, 0), {1, 1, 21, 21, 3, 3}));
  c.push_back(make_case(bigbird(4, 2, 6, 3), {3, 2, 22, 22, 5, 5}, true));
  c.push_back(make_case(bigbird(3, 1, 0, 5), {1, 1, 5, 5, 3, 3}));
  // hierarchical: segments of different lengths; one segment (full coverage).
  c.push_back(make_case(hierarchical({0, 0, 0, 1, 1, 2, 2, 2, 2, 3}, 5), {1, 2, 10, 10, 3, 3}));
  c.push_back(make_case(hierarchical({4, 4, 4, 4, 4, 4, 4, 4, 4}, 64), {3, 1, 9, 9, 2, 2}, true));
  // explicit: one mask for all heads and one per head, each with an empty row.
  c.push_back(make_case(explicit_mask(random_mask({11, 11}, 5, 4), 5), {1, 2, 11, 11, 3, 3}));
  c.push_back(make_case(explicit_mask(random_mask({3, 7, 12}, 6, 0), 1), {1, 3, 7, 12, 4, 2}));
  c.push_back(make_case(explicit_mask(random_mask({1, 9, 9}, 8, 8), 64), {3, 1, 9, 9, 3, 3}, true));
  // per-head: local, causal dense, random and longformer heads side by side.
  {
    PatternSpec s;
    s.kind = K::per_head;
    s.tile = 5;
    s.per_head = {token(K::window, 1, 1, false, 5), token(K::dense, 0, 1, true, 5),
                  token(K::random, 0, 1, false, 5, {}, 2, 3),
                  token(K::longformer, 1, 1, false, 5, {0})};
    c.push_back(make_case(s, {1, 4, 18, 18, 3, 3}));
  }
  // per-head: the modern kinds side by side (a (left, right) window, chunks, a neighborhood).
  {
    PatternSpec s;
    s.kind = K::per_head;
    s.tile = 5;
    s.per_head = {window_pair(token(K::window, 0, 1, false, 5), 2, 0), chunked(4, false, 5),
                  neighborhood(5, 1, false, 5)};
    c.push_back(make_case(s, {1, 3, 13, 13, 3, 3}));
  }
  // bigbird with an explicit random table [num_heads, nb - 2, r] that lists a window block
  // and a block twice: set semantics say each key still counts once.
  {
    PatternSpec s = bigbird(4, 2, 0);
    Tensor<int64_t> table({2, 4, 2}, 0);
    table.data = {3, 5, 4, 0, 1, 1, 0, 2,   // head 0: qb1 {3,5}, qb2 {4,0}, qb3 {1,1}, qb4 {0,2}
                  5, 4, 1, 1, 5, 0, 2, 3};  // head 1
    s.random_table = table;
    c.push_back(make_case(s, {1, 2, 24, 24, 3, 3}));
  }
  return c;
}

}  // namespace sparseattn::testing_grid
