// HeadLayout: the canonical, materialized pattern of one head — the single source of
// truth for "which key may query i attend".
//
// Form: block-sparse rows (BigBird's block layout; FlexAttention's BlockMask). Queries
// and keys are cut into square tiles of `tile` tokens (the last tile may be partial).
// For every query tile, `col` lists the key tiles that hold at least one allowed pair,
// ascending. A listed tile is either *full* (every in-bounds pair allowed: no per-element
// mask needed) or *partial* (a bitmask says which pairs). Token-level patterns use the
// same form with small tiles; the dense mask, per-row key lists, statistics, the GPU copy
// and the layer graph are all pure functions of it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sparseattn {

struct HeadLayout {
  static constexpr int64_t kFullTile = -1;

  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;
  int64_t tile = 1;              // tokens per tile side, >= 1

  std::vector<int64_t> row_ptr;  // [num_q_tiles + 1]; tiles of query tile r: [row_ptr[r], row_ptr[r+1])
  std::vector<int32_t> col;      // [num_tiles] key-tile index, strictly ascending within a row
  std::vector<int64_t> bits_at;  // [num_tiles] kFullTile, or the word offset of the tile's mask in `bits`
  // Partial-tile masks, `tile` rows of words_per_row() words each; bit c of row r set
  // means query (qt*tile + r) may attend key (kt*tile + c).
  std::vector<uint64_t> bits;
  int64_t nnz = 0;               // allowed (query, key) pairs

  int64_t num_q_tiles() const { return (seq_len_q + tile - 1) / tile; }
  int64_t num_k_tiles() const { return (seq_len_k + tile - 1) / tile; }
  int64_t num_tiles() const { return static_cast<int64_t>(col.size()); }
  int64_t words_per_row() const { return (tile + 63) / 64; }
  bool is_full(int64_t entry) const { return bits_at[entry] == kFullTile; }

  // Whether the partial tile `entry` allows (local row r, local column c).
  bool tile_allows(int64_t entry, int64_t r, int64_t c) const {
    if (is_full(entry)) return true;
    const uint64_t w = bits[bits_at[entry] + r * words_per_row() + c / 64];
    return (w >> (c % 64)) & 1u;
  }

  // Whether query i may attend key j (0 <= i < seq_len_q, 0 <= j < seq_len_k).
  // O(log tiles in the row).
  bool allowed(int64_t i, int64_t j) const;
};

// Per-row key lists (CSR), derived from a layout: keys of query i are
// col[row_ptr[i] .. row_ptr[i+1]), ascending, each once.
struct RowKeys {
  std::vector<int64_t> row_ptr;  // [seq_len_q + 1]
  std::vector<int32_t> col;      // [nnz]
};
RowKeys row_keys(const HeadLayout& layout);

// The keys of one query row, ascending (cleared first).
void row_keys_of(const HeadLayout& layout, int64_t i, std::vector<int32_t>& keys);

// Dense mask [seq_len_q, seq_len_k], 1 = may attend.
Tensor<uint8_t> dense_mask(const HeadLayout& layout);

// Builds a HeadLayout one query tile at a time, in order, from keys, key ranges and
// whole tiles. Repeated keys are counted once (set semantics, contract §2).
//   qt: query tile; i: query index inside that tile; j, [j0, j1): key indices, clipped
//   to [0, seq_len_k). Throws InvalidArgument for out-of-order tiles or i outside qt.
class LayoutBuilder {
 public:
  LayoutBuilder(int64_t seq_len_q, int64_t seq_len_k, int64_t tile);

  void begin_query_tile(int64_t qt);
  void add_key(int64_t i, int64_t j);
  void add_key_range(int64_t i, int64_t j0, int64_t j1);
  void add_full_tile(int64_t kt);  // every in-bounds pair of (current qt, kt)
  HeadLayout finish();

 private:
  void flush_query_tile();
  uint64_t* scratch_for(int64_t kt);

  HeadLayout layout_;
  int64_t current_qt_ = -1;
  std::vector<int64_t> scratch_of_kt_;   // [num_k_tiles] offset into scratch_, or -1
  std::vector<int64_t> touched_kt_;      // key tiles touched by the current query tile
  std::vector<uint64_t> scratch_;        // touched tiles' masks
  std::vector<uint8_t> full_kt_;         // [num_k_tiles] 1: added whole by add_full_tile
};

}  // namespace sparseattn
