// PackedPattern: everything a CUDA kernel may learn about a Pattern, flattened into
// arrays on the host (pure C++, no CUDA: tests/cuda proves it on any machine). The one
// upload helper (device_pattern.h) copies exactly these arrays, once per Problem; no
// kernel re-derives a pattern or draws a random number (contract §3).
//
// Heads that share a HeadLayout (Pattern::heads holds shared_ptrs) are packed once.
#pragma once

#include <cstdint>
#include <vector>

#include "optimized/cuda/head_view.h"
#include "reference/pattern/band.h"
#include "reference/pattern/pattern.h"

namespace sparseattn {
namespace cuda {

struct PackedPattern {
  int64_t num_heads = 0, seq_len_q = 0, seq_len_k = 0;

  // The concatenated layouts. head_*_offset[h] is where head h's arrays start; a head's
  // col entries are row_ptr values relative to its col offset, and its bits_at values
  // word offsets relative to its bits offset (as in HeadLayout).
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col;
  std::vector<int64_t> bits_at;
  std::vector<uint64_t> bits;
  std::vector<int64_t> head_row_ptr_offset, head_col_offset, head_bits_offset;
  std::vector<int64_t> head_tile;

  // Key padding [batch, seq_len_k] (nonzero = real), empty when the pattern has none.
  std::vector<uint8_t> key_valid;

  // The block-sparse kernels' heavy-first order (c06, c07, c08): every (head, query tile)
  // once, as (head << 32) | tile, by descending work = listed key tiles x tile side (the
  // keys one row visits), ties in (head, tile) order. Global rows (Longformer's global
  // tokens, BigBird's first and last block) list every key tile: started first, they
  // run while the light tiles fill the other multiprocessors instead of after them.
  std::vector<int64_t> schedule;

  // The band of window-like kinds (window, longformer, random); has_band false otherwise.
  bool has_band = false;
  BandParams band;
  bool causal = false;  // dense kind: its causal flag
};

// Packs `pattern`. Throws InvalidArgument("seq_len") when a size does not fit the
// kernels' 32-bit row/key indices.
PackedPattern pack_pattern(const Pattern& pattern);

// Head h of `packed` viewed through the given base pointers: host vectors for tests, or
// device copies of the same arrays (device_pattern.cu). Pointers may be null when the
// corresponding array is empty.
HeadView head_view(const PackedPattern& packed, int64_t h, const int64_t* row_ptr,
                   const int32_t* col, const int64_t* bits_at, const uint64_t* bits);

// The heavy-first schedule of `packed` (its layouts only): see PackedPattern::schedule.
std::vector<int64_t> heavy_first_schedule(const PackedPattern& packed);

// Whether every listed tile of every head is full (no bitmask needed): BigBird's block
// layouts. c07 serves only such patterns.
bool all_tiles_full(const Pattern& pattern);

}  // namespace cuda
}  // namespace sparseattn
