// HeadView: one head's HeadLayout (pattern/layout.h) as raw arrays, the form
// the CUDA kernels read. The same struct points at host memory (tests) or at device
// memory (kernels); the lookups below are SPARSEATTN_HD so both sides share one rule.
#pragma once

#include <cstdint>

#include "pattern/hd.h"

namespace sparseattn {
namespace cuda {

struct HeadView {
  const int64_t* row_ptr = nullptr;   // [num_q_tiles + 1] entries of query tile r: [row_ptr[r], row_ptr[r+1])
  const int32_t* col = nullptr;       // [num_tiles] key tile of each entry, ascending per row
  const int64_t* bits_at = nullptr;   // [num_tiles] -1 (full tile) or word offset into bits
  const uint64_t* bits = nullptr;     // partial-tile masks: tile rows x words_per_row words
  int64_t tile = 1;                   // tokens per tile side
  int64_t words_per_row = 1;          // (tile + 63) / 64
  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;
};

// Whether entry `e` (a listed tile) allows local row r, local column c; the same bit
// layout as HeadLayout::tile_allows.
SPARSEATTN_HD bool view_tile_allows(const HeadView& h, int64_t e, int64_t r, int64_t c) {
  const int64_t at = h.bits_at[e];
  if (at < 0) return true;
  return (h.bits[at + r * h.words_per_row + c / 64] >> (c % 64)) & 1u;
}

// Whether query i may attend key j through this head's layout (key padding excluded).
// Binary search over the row's tiles: for tests and debugging; kernels walk the row.
SPARSEATTN_HD bool view_allows(const HeadView& h, int64_t i, int64_t j) {
  const int64_t qt = i / h.tile, kt = j / h.tile;
  int64_t lo = h.row_ptr[qt], hi = h.row_ptr[qt + 1];
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (h.col[mid] < kt) lo = mid + 1; else hi = mid;
  }
  if (lo == h.row_ptr[qt + 1] || h.col[lo] != kt) return false;
  return view_tile_allows(h, lo, i % h.tile, j % h.tile);
}

}  // namespace cuda
}  // namespace sparseattn
