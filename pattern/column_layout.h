// ColumnLayout: a HeadLayout read by key tiles — for every key tile, the query tiles that
// list it, ascending (the transpose of the block-sparse rows; CSC of the same tiles).
//
// The backward pass needs it: dK and dV of a key tile sum over the queries that attend it
// (FlashAttention-2's key-tile outer loop, Dao 2023, Alg. 2), and a kernel that gives each
// key tile to one thread and walks that tile's column in this fixed order computes dk, dv
// without atomics, bit-identically for any thread count. It is a pure function of the
// layout: no pattern is read twice; `entry` points back into the row layout (bits_at,
// is_full, tile_allows), so partial-tile bitmasks are never copied.
#pragma once

#include <cstdint>
#include <vector>

#include "pattern/layout.h"

namespace sparseattn {

struct ColumnLayout {
  std::vector<int64_t> col_ptr;  // [num_k_tiles + 1]; tiles of key tile c: [col_ptr[c], col_ptr[c+1])
  std::vector<int32_t> row;      // [num_tiles] query-tile index, strictly ascending within a column
  std::vector<int64_t> entry;    // [num_tiles] the tile's index in the row layout (col, bits_at)
};

// O(num_tiles + num_k_tiles): a counting sort of the layout's tiles by key tile. Walking
// query tiles in order keeps every column's query tiles ascending.
inline ColumnLayout column_layout(const HeadLayout& layout) {
  const int64_t nkt = layout.num_k_tiles(), nqt = layout.num_q_tiles();
  ColumnLayout c;
  c.col_ptr.assign(static_cast<size_t>(nkt + 1), 0);
  for (int32_t kt : layout.col) ++c.col_ptr[kt + 1];
  for (int64_t t = 0; t < nkt; ++t) c.col_ptr[t + 1] += c.col_ptr[t];
  std::vector<int64_t> next(c.col_ptr.begin(), c.col_ptr.end() - 1);
  c.row.resize(layout.col.size());
  c.entry.resize(layout.col.size());
  for (int64_t qt = 0; qt < nqt; ++qt) {
    for (int64_t e = layout.row_ptr[qt]; e < layout.row_ptr[qt + 1]; ++e) {
      const int64_t at = next[layout.col[e]]++;
      c.row[at] = static_cast<int32_t>(qt);
      c.entry[at] = e;
    }
  }
  return c;
}

}  // namespace sparseattn
