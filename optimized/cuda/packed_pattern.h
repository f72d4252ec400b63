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
#include "optimized/cuda/tiling.h"
#include "pattern/band.h"
#include "pattern/pattern.h"

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

  // The block-sparse kernels' grid (c06, c07, c08; tiling.h: ScheduleEntry): every (head,
  // query tile) once, or in `parts` contiguous parts of its listed key tiles when that list
  // is long (split-K), ordered by work per part (listed tiles x tile side / parts),
  // descending, ties in (head, tile, part) order. Global rows (Longformer's global tokens,
  // BigBird's first and last block) list every key tile: split, and started first, they
  // no longer run alone after the rest of the grid has drained. split_groups: the split
  // (head, tile)s and their workspace slots, for the merge kernel; num_slots: their sum;
  // max_tile: the largest tile side (the workspace's rows per slot).
  std::vector<ScheduleEntry> schedule;
  std::vector<SplitGroup> split_groups;
  int64_t num_slots = 0;
  int64_t max_tile = 1;

  // The band of window-like kinds (window, longformer, random); has_band false otherwise.
  bool has_band = false;
  BandParams band;
  bool causal = false;  // dense kind: its causal flag

  // selected (contract §3.16), for c10: each row of the index table as the kernel reads it —
  // −1 slots dropped, j <= p under causal, each distinct key once in order of first listing
  // with its multiplicity (1, or under duplicates = count the times it is listed). Row
  // (b_sel, r, i) spans sel_row_ptr[x] .. sel_row_ptr[x + 1], x = (b_sel · sel_heads + r) ·
  // seq_len_q + i. Key padding is applied by the kernel (it depends on the batch element).
  // Empty for every other kind.
  int64_t sel_batch = 0, sel_heads = 0;
  std::vector<int64_t> sel_row_ptr;
  std::vector<int32_t> sel_key, sel_count;
};

// Packs `pattern`. Throws InvalidArgument("seq_len") when a size does not fit the
// kernels' 32-bit row/key indices.
PackedPattern pack_pattern(const Pattern& pattern);

// Head h of `packed` viewed through the given base pointers: host vectors for tests, or
// device copies of the same arrays (device_pattern.cu). Pointers may be null when the
// corresponding array is empty.
HeadView head_view(const PackedPattern& packed, int64_t h, const int64_t* row_ptr,
                   const int32_t* col, const int64_t* bits_at, const uint64_t* bits);

// Fills packed.schedule / split_groups / num_slots from its layouts. A query tile listing
// n key tiles is split into ceil(n / cap) parts (at most kMaxParts). cap = 0 chooses it:
// max(kMinSplitTiles, 4 x the median n), doubled until the workspace needs at most
// kMaxSplitRows rows (slots x max_tile) — so uniform patterns (dense, a plain window) are
// never split, and only rows far heavier than the typical one are. cap >= 1 forces it
// (tests: cap 1 gives every listed tile its own part). pack_pattern() calls it with
// split_cap() (0 unless set_split_cap() changed it).
constexpr int64_t kMinSplitTiles = 32;
constexpr int64_t kMaxParts = 64;
constexpr int64_t kMaxSplitRows = 65536;
void plan_schedule(PackedPattern& packed, int64_t cap);

// The split cap pack_pattern() uses, process-wide: 0 (automatic) by default. For tests
// that must exercise the split-K path on small problems. Not thread-safe.
int64_t split_cap();
void set_split_cap(int64_t cap);

// Whether every listed tile of every head is full (no bitmask needed): BigBird's block
// layouts. c07 serves only such patterns.
bool all_tiles_full(const Pattern& pattern);

}  // namespace cuda
}  // namespace sparseattn
