// allowed_spec(): contract §3's table written out again, independently of pattern/,
// one predicate per row of the table, straight from the text. Tests compare every
// materialized mask with it, pair by pair. It is deliberately slow and literal: no tiles,
// no band arithmetic shared with the library (band.h is not included), no PRNG — random
// parts are read from Pattern::random_draws, the record of what was drawn.
//
// The decisions contract §3 leaves open are those docs/patterns.md lists; where this file
// takes one, it says so with "DECISION" and the test that pins it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "pattern/pattern.h"

namespace sparseattn::testing_spec {

// Query i sits at key position p = i + seq_len_k - seq_len_q (bottom-right alignment).
inline int64_t position_of(const PatternSizes& z, int64_t i) { return i + z.seq_len_k - z.seq_len_q; }

// window (contract §3.3): j = p + d*t for an integer t with |t| <= w (t <= 0 if causal);
// with the pair (window_left L, window_right R): -L <= t <= R, -1 = no bound on that side.
inline bool window_spec(const PatternSpec& s, const PatternSizes& z, int64_t i, int64_t j) {
  const int64_t delta = j - position_of(z, i);
  if (delta % s.dilation != 0) return false;
  const int64_t t = delta / s.dilation;
  if (s.causal && t > 0) return false;
  if (!s.window_left) return std::llabs(t) <= s.window;
  const int64_t left = *s.window_left, right = *s.window_right;
  return (left == -1 || t >= -left) && (right == -1 || t <= right);
}

// chunked (contract §3.14): floor(p / C) == floor(j / C), floor division (a query before
// the first key, p < 0, shares no chunk with any key); j <= p if causal.
inline int64_t floor_of(int64_t a, int64_t b) { return a >= 0 ? a / b : -1 - (-a - 1) / b; }
inline bool chunked_spec(const PatternSpec& s, const PatternSizes& z, int64_t i, int64_t j) {
  const int64_t p = position_of(z, i), c = *s.chunk_size;
  if (s.causal && j > p) return false;
  return floor_of(p, c) == floor_of(j, c);
}

// neighborhood (contract §3.15), literally: the keys of p's residue class mod d, listed in
// order, form a sub-sequence; p is its entry number idx; the query attends entries
// start .. start + K - 1, start = clamp(idx - floor(K/2), 0, (entries) - K); with causal
// entries idx - K + 1 .. idx (those that exist).
inline bool neighborhood_spec(const PatternSpec& s, const PatternSizes& z, int64_t i, int64_t j) {
  const int64_t p = position_of(z, i), d = s.dilation, k = *s.kernel_size;
  std::vector<int64_t> entries;  // the class of p
  for (int64_t key = 0; key < z.seq_len_k; ++key)
    if (key % d == p % d) entries.push_back(key);
  const int64_t n = static_cast<int64_t>(entries.size());
  const int64_t idx = std::find(entries.begin(), entries.end(), p) - entries.begin();
  const int64_t at = std::find(entries.begin(), entries.end(), j) - entries.begin();
  if (at == n) return false;  // j is not in p's class
  if (s.causal) return at <= idx && at >= idx - k + 1;
  const int64_t start = std::min(std::max<int64_t>(idx - k / 2, 0), n - k);
  return at >= start && at <= start + k - 1;
}

inline bool is_global(const PatternSpec& s, int64_t position) {
  return std::find(s.global.begin(), s.global.end(), position) != s.global.end();
}

// Whether key-block `kb` is among the draws of row `row` of head h in `draws`
// [num_heads, rows, r] (-1 entries are draws that could not be made).
inline bool drawn(const Tensor<int64_t>& draws, int64_t h, int64_t row, int64_t value) {
  if (draws.rank() != 3 || draws.dim(2) == 0) return false;
  const int64_t r = draws.dim(2);
  const int64_t* p = draws.ptr() + (h * draws.dim(1) + row) * r;
  return std::find(p, p + r, value) != p + r;
}

// contract §3 for head h, query i, key j; key padding excluded (tested separately).
// `draws` is the pattern's random_draws (random and bigbird kinds).
inline bool allowed_spec(const PatternSpec& s, const PatternSizes& z, const Tensor<int64_t>& draws,
                         int64_t h, int64_t i, int64_t j) {
  const int64_t p = position_of(z, i);
  switch (s.kind) {
    case PatternKind::dense:
      return !s.causal || j <= p;
    case PatternKind::window:
      return window_spec(s, z, i, j);
    case PatternKind::longformer:
    case PatternKind::random: {
      // DECISION (docs/patterns.md "causal is a hard constraint"): with causal, global
      // rows and global keys also stop at the query's position.
      if (s.causal && j > p) return false;
      const bool base = window_spec(s, z, i, j) || is_global(s, p) || is_global(s, j);
      if (s.kind == PatternKind::longformer) return base;
      return base || drawn(draws, h, i, j);
    }
    case PatternKind::bigbird: {
      // nb = ceil(n / b), written so that a block_size near 2^63 cannot overflow.
      const int64_t b = s.block_size, nb = z.seq_len_q / b + (z.seq_len_q % b != 0);
      const int64_t qb = i / b, kb = j / b;
      if (qb == 0 || qb == nb - 1) return true;          // global query blocks
      if (kb == 0 || kb == nb - 1) return true;          // global key blocks
      if (std::llabs(qb - kb) <= 1) return true;         // window blocks
      return drawn(draws, h, qb - 1, kb);                // random blocks (rows: qb 1..nb-2)
    }
    case PatternKind::bigbird_etc: {
      const int64_t g = s.num_global_tokens, b = s.block_size;
      if (i < g || j < g) return true;                   // global tokens: all, and by all
      const int64_t qb = (i - g) / b, kb = (j - g) / b;  // blocks of the other tokens
      if (std::llabs(qb - kb) <= 1) return true;
      return drawn(draws, h, qb, kb);
    }
    case PatternKind::hierarchical: {
      const std::vector<int64_t>& seg = s.segment_ids;
      const bool j_is_representative =
          j == static_cast<int64_t>(seg.size()) - 1 || seg[j + 1] != seg[j];
      return seg[i] == seg[j] || j_is_representative;
    }
    case PatternKind::explicit_mask: {
      const Tensor<uint8_t>& m = *s.mask;
      const int64_t slice = (m.rank() == 3 && m.dim(0) > 1) ? h : 0;
      return m.data[(slice * z.seq_len_q + i) * z.seq_len_k + j] != 0;
    }
    case PatternKind::chunked:
      return chunked_spec(s, z, i, j);
    case PatternKind::neighborhood:
      return neighborhood_spec(s, z, i, j);
    case PatternKind::selected:
    case PatternKind::selected_blocks: {
      // contract §3.16–§3.17 for batch element 0: j listed in the row (or in a listed block)
      // that head h reads (H_sel = 1: row 0; else row h / (H / H_sel)), j <= p under causal.
      const Tensor<int64_t>& t = s.kind == PatternKind::selected ? *s.kv_indices : *s.block_indices;
      const int64_t hs = t.dim(1), row = hs == 1 ? 0 : h / (z.num_heads / hs);
      const bool blocks = s.kind == PatternKind::selected_blocks;
      const int64_t r = blocks ? i / *s.block_size_q : i;
      const int64_t* e = t.ptr() + (row * t.dim(2) + r) * t.dim(3);
      bool listed = false;
      for (int64_t c = 0; c < t.dim(3); ++c)
        listed |= e[c] >= 0 && (blocks ? j / *s.block_size_k == e[c] : j == e[c]);
      return listed && (!s.causal || j <= p);
    }
    case PatternKind::per_head:
      return false;  // tested head by head against each head's own spec
  }
  return false;
}

}  // namespace sparseattn::testing_spec
