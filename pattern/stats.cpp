#include <algorithm>
#include <map>

#include "pattern/pattern.h"

namespace sparseattn {

namespace {

struct LayoutCounts {
  int64_t nnz = 0, row_min = 0, row_max = 0, empty_rows = 0, tiles = 0, full_tiles = 0;
};

// Keys per query row, from the tiles (full tiles count their in-bounds columns, partial
// tiles their set bits): O(tiles * tile) rather than O(nnz).
LayoutCounts count_layout(const HeadLayout& l) {
  LayoutCounts c;
  c.row_min = l.seq_len_k;
  std::vector<int64_t> per_row(static_cast<size_t>(l.tile));
  for (int64_t qt = 0; qt < l.num_q_tiles(); ++qt) {
    const int64_t rows = std::min(l.tile, l.seq_len_q - qt * l.tile);
    std::fill(per_row.begin(), per_row.end(), 0);
    for (int64_t e = l.row_ptr[qt]; e < l.row_ptr[qt + 1]; ++e) {
      const int64_t cols = std::min(l.tile, l.seq_len_k - int64_t{l.col[e]} * l.tile);
      ++c.tiles;
      if (l.is_full(e)) {
        ++c.full_tiles;
        for (int64_t r = 0; r < rows; ++r) per_row[r] += cols;
        continue;
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t w = 0; w < l.words_per_row(); ++w)
          per_row[r] += __builtin_popcountll(l.bits[l.bits_at[e] + r * l.words_per_row() + w]);
    }
    for (int64_t r = 0; r < rows; ++r) {
      c.nnz += per_row[r];
      c.row_min = std::min(c.row_min, per_row[r]);
      c.row_max = std::max(c.row_max, per_row[r]);
      c.empty_rows += per_row[r] == 0;
    }
  }
  return c;
}

}  // namespace

PatternStats pattern_stats(const Pattern& p) {
  PatternStats s;
  std::map<const HeadLayout*, LayoutCounts> seen;  // shared layouts are counted once
  s.row_min = p.sizes.seq_len_k;
  for (const auto& head : p.heads) {
    auto it = seen.find(head.get());
    if (it == seen.end()) it = seen.emplace(head.get(), count_layout(*head)).first;
    const LayoutCounts& c = it->second;
    s.nnz += c.nnz;
    s.row_min = std::min(s.row_min, c.row_min);
    s.row_max = std::max(s.row_max, c.row_max);
    s.empty_rows += c.empty_rows;
    s.num_tiles += c.tiles;
    s.full_tiles += c.full_tiles;
  }
  s.dense_pairs = p.sizes.num_heads * p.sizes.seq_len_q * p.sizes.seq_len_k;
  s.density = static_cast<double>(s.nnz) / static_cast<double>(s.dense_pairs);
  s.row_mean = static_cast<double>(s.nnz) / static_cast<double>(p.sizes.num_heads * p.sizes.seq_len_q);
  return s;
}

double attention_flops(const PatternStats& stats, int64_t head_dim, int64_t head_dim_v) {
  return 2.0 * static_cast<double>(stats.nnz) * static_cast<double>(head_dim + head_dim_v);
}

}  // namespace sparseattn
