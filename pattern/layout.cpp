#include "pattern/layout.h"

#include <algorithm>

#include "core/error.h"

namespace sparseattn {

namespace {

int popcount64(uint64_t x) { return __builtin_popcountll(x); }

// Sets bits [c0, c1) of a row of words.
void set_bit_range(uint64_t* row, int64_t c0, int64_t c1) {
  while (c0 < c1) {
    const int64_t word = c0 / 64, bit = c0 % 64;
    const int64_t n = std::min<int64_t>(64 - bit, c1 - c0);
    const uint64_t ones = n == 64 ? ~0ull : ((1ull << n) - 1);
    row[word] |= ones << bit;
    c0 += n;
  }
}

}  // namespace

bool HeadLayout::allowed(int64_t i, int64_t j) const {
  const int64_t qt = i / tile, kt = j / tile;
  const auto first = col.begin() + row_ptr[qt], last = col.begin() + row_ptr[qt + 1];
  const auto it = std::lower_bound(first, last, static_cast<int32_t>(kt));
  if (it == last || *it != kt) return false;
  return tile_allows(it - col.begin(), i % tile, j % tile);
}

void row_keys_of(const HeadLayout& layout, int64_t i, std::vector<int32_t>& keys) {
  keys.clear();
  const int64_t qt = i / layout.tile, r = i % layout.tile;
  for (int64_t e = layout.row_ptr[qt]; e < layout.row_ptr[qt + 1]; ++e) {
    const int64_t k0 = static_cast<int64_t>(layout.col[e]) * layout.tile;
    const int64_t k1 = std::min(k0 + layout.tile, layout.seq_len_k);
    for (int64_t j = k0; j < k1; ++j)
      if (layout.tile_allows(e, r, j - k0)) keys.push_back(static_cast<int32_t>(j));
  }
}

RowKeys row_keys(const HeadLayout& layout) {
  RowKeys rows;
  rows.row_ptr.reserve(layout.seq_len_q + 1);
  rows.row_ptr.push_back(0);
  rows.col.reserve(layout.nnz);
  std::vector<int32_t> keys;
  for (int64_t i = 0; i < layout.seq_len_q; ++i) {
    row_keys_of(layout, i, keys);
    rows.col.insert(rows.col.end(), keys.begin(), keys.end());
    rows.row_ptr.push_back(static_cast<int64_t>(rows.col.size()));
  }
  return rows;
}

Tensor<uint8_t> dense_mask(const HeadLayout& layout) {
  Tensor<uint8_t> mask({layout.seq_len_q, layout.seq_len_k}, 0);
  std::vector<int32_t> keys;
  for (int64_t i = 0; i < layout.seq_len_q; ++i) {
    row_keys_of(layout, i, keys);
    for (int32_t j : keys) mask.data[i * layout.seq_len_k + j] = 1;
  }
  return mask;
}

LayoutBuilder::LayoutBuilder(int64_t seq_len_q, int64_t seq_len_k, int64_t tile) {
  require(seq_len_q >= 1, "seq_len_q", seq_len_q, "must be >= 1");
  require(seq_len_k >= 1, "seq_len_k", seq_len_k, "must be >= 1");
  require(tile >= 1, "tile", tile, "must be >= 1");
  // Key-tile indices are stored as int32.
  require((seq_len_k + tile - 1) / tile <= INT32_MAX, "seq_len_k", seq_len_k,
          "must give at most 2^31-1 key tiles");
  require(seq_len_k <= INT32_MAX, "seq_len_k", seq_len_k, "must be < 2^31 (keys are int32)");
  layout_.seq_len_q = seq_len_q;
  layout_.seq_len_k = seq_len_k;
  layout_.tile = tile;
  layout_.row_ptr.push_back(0);
  scratch_of_kt_.assign(static_cast<size_t>(layout_.num_k_tiles()), -1);
  full_kt_.assign(static_cast<size_t>(layout_.num_k_tiles()), 0);
}

void LayoutBuilder::begin_query_tile(int64_t qt) {
  require(qt > current_qt_ && qt < layout_.num_q_tiles(), "query tile", qt,
          "tiles must be added in increasing order below " +
              std::to_string(layout_.num_q_tiles()));
  if (current_qt_ >= 0) flush_query_tile();
  // Query tiles skipped over have no allowed keys: empty rows.
  while (static_cast<int64_t>(layout_.row_ptr.size()) - 1 < qt)
    layout_.row_ptr.push_back(static_cast<int64_t>(layout_.col.size()));
  current_qt_ = qt;
}

uint64_t* LayoutBuilder::scratch_for(int64_t kt) {
  int64_t& at = scratch_of_kt_[kt];
  if (at < 0) {
    at = static_cast<int64_t>(scratch_.size());
    scratch_.resize(scratch_.size() + layout_.tile * layout_.words_per_row(), 0);
    touched_kt_.push_back(kt);
  }
  return scratch_.data() + at;
}

void LayoutBuilder::add_key(int64_t i, int64_t j) { add_key_range(i, j, j + 1); }

void LayoutBuilder::add_key_range(int64_t i, int64_t j0, int64_t j1) {
  const int64_t tile = layout_.tile;
  require(current_qt_ >= 0 && i / tile == current_qt_ && i < layout_.seq_len_q, "query", i,
          "must lie in the current query tile " + std::to_string(current_qt_));
  j0 = std::max<int64_t>(j0, 0);
  j1 = std::min(j1, layout_.seq_len_k);
  const int64_t r = i % tile, wpr = layout_.words_per_row();
  while (j0 < j1) {
    const int64_t kt = j0 / tile, k0 = kt * tile;
    const int64_t end = std::min(j1, k0 + tile);
    if (!full_kt_[kt]) set_bit_range(scratch_for(kt) + r * wpr, j0 - k0, end - k0);
    j0 = end;
  }
}

void LayoutBuilder::add_full_tile(int64_t kt) {
  require(current_qt_ >= 0, "query tile", current_qt_, "begin_query_tile first");
  require(kt >= 0 && kt < layout_.num_k_tiles(), "key tile", kt,
          "must be in [0, " + std::to_string(layout_.num_k_tiles()) + ")");
  // A full tile needs no bitmask, neither here nor in the layout: mark it, so that a
  // block pattern (BigBird: only full tiles) builds without any scratch — its memory does
  // not grow with the block size (contract §5, docs/patterns.md "Memory bound").
  if (full_kt_[kt]) return;
  full_kt_[kt] = 1;
  if (scratch_of_kt_[kt] < 0) touched_kt_.push_back(kt);
}

void LayoutBuilder::flush_query_tile() {
  const int64_t tile = layout_.tile, wpr = layout_.words_per_row();
  const int64_t rows = std::min(tile, layout_.seq_len_q - current_qt_ * tile);
  std::sort(touched_kt_.begin(), touched_kt_.end());
  for (int64_t kt : touched_kt_) {
    const int64_t cols = std::min(tile, layout_.seq_len_k - kt * tile);
    if (full_kt_[kt]) {  // every pair of the tile, whatever else was added to it
      full_kt_[kt] = 0;
      scratch_of_kt_[kt] = -1;
      layout_.nnz += rows * cols;
      layout_.col.push_back(static_cast<int32_t>(kt));
      layout_.bits_at.push_back(HeadLayout::kFullTile);
      continue;
    }
    const uint64_t* bits = scratch_.data() + scratch_of_kt_[kt];
    int64_t set = 0;
    for (int64_t w = 0; w < rows * wpr; ++w) set += popcount64(bits[w]);
    scratch_of_kt_[kt] = -1;
    if (set == 0) continue;
    layout_.nnz += set;
    layout_.col.push_back(static_cast<int32_t>(kt));
    if (set == rows * cols) {
      layout_.bits_at.push_back(HeadLayout::kFullTile);
    } else {
      layout_.bits_at.push_back(static_cast<int64_t>(layout_.bits.size()));
      layout_.bits.insert(layout_.bits.end(), bits, bits + tile * wpr);
    }
  }
  touched_kt_.clear();
  scratch_.clear();
  layout_.row_ptr.push_back(static_cast<int64_t>(layout_.col.size()));
}

HeadLayout LayoutBuilder::finish() {
  if (current_qt_ >= 0) flush_query_tile();
  current_qt_ = layout_.num_q_tiles();
  while (static_cast<int64_t>(layout_.row_ptr.size()) - 1 < layout_.num_q_tiles())
    layout_.row_ptr.push_back(static_cast<int64_t>(layout_.col.size()));
  return std::move(layout_);
}

}  // namespace sparseattn
