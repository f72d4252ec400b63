// Index arithmetic every CUDA kernel shares, written once for host and device
// (SPARSEATTN_HD) so tests/cuda/cuda_tiling_test.cpp can prove it on any machine, with
// no GPU and no nvcc: which key chunks a block of queries visits, how a kernel's
// query blocks map onto the pattern's tiles, the key-padding predicate, and grid sizing.
//
// Vocabulary (FlashAttention, Dao et al. 2022, Alg. 1): a thread block owns Br query
// rows [i0, i1) and walks the keys in chunks of at most Bc keys [k0, k1). A chunk is the
// unit of shared-memory staging; it is never a pattern unit. Which keys are allowed
// inside a chunk always comes from the Pattern (band.h, the HeadLayout tiles).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"
#include "reference/pattern/band.h"
#include "reference/pattern/hd.h"

namespace sparseattn {
namespace cuda {

SPARSEATTN_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
SPARSEATTN_HD int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
SPARSEATTN_HD int64_t round_down(int64_t a, int64_t m) { return floor_div(a, m) * m; }
SPARSEATTN_HD int64_t blocks_of(int64_t n, int64_t block) { return (n + block - 1) / block; }

// An arithmetic run of indices first, first + stride, ..., first + stride*(count-1):
// the query rows a thread block owns, or the keys of one chunk it stages. Contiguous
// runs have stride 1; c05 uses stride = dilation.
struct Strided {
  int64_t first;
  int64_t stride;
  int64_t count;
  SPARSEATTN_HD int64_t at(int64_t r) const { return first + stride * r; }
};

// The dense pattern (and its causal form) as a band wide enough to allow every key:
// |j - p| <= seq_len_q + seq_len_k for every query position p and key j. Dense kernels
// use band_allows() / band_key_span() on it, so "causal" is the band's rule (contract §3,
// bottom-right alignment) and not a second copy of it.
SPARSEATTN_HD BandParams dense_band(int64_t seq_len_q, int64_t seq_len_k, bool causal) {
  BandParams b;
  b.seq_len_q = seq_len_q;
  b.seq_len_k = seq_len_k;
  b.window = seq_len_q + seq_len_k;
  b.dilation = 1;
  b.causal = causal;
  return b;
}

// Keys a block of queries [i0, i1) visits through the band, as whole aligned chunks:
// chunk starts k0 run over the multiples of `chunk` in [begin, end), and each chunk
// covers [k0, min(k0 + chunk, end)); `end` is a multiple of `chunk` or seq_len_k, so
// only the sequence's own end clips a chunk. Empty (begin == end) when the band reaches
// no key. Every key some row of the block may attend through the band lies in
// [begin, end), and the chunks are disjoint, so a kernel counts each allowed key once.
struct ChunkRange {
  int64_t begin;
  int64_t end;
};
SPARSEATTN_HD ChunkRange band_chunks(const BandParams& b, int64_t i0, int64_t i1,
                                     int64_t chunk) {
  const KeySpan span = band_key_span(b, i0, i1);
  ChunkRange r;
  if (span.lo > span.hi) {
    r.begin = r.end = 0;
    return r;
  }
  r.begin = round_down(span.lo, chunk);
  r.end = min64(round_down(span.hi, chunk) + chunk, b.seq_len_k);
  return r;
}

// Longformer's global keys outside the band's chunks (Beltagy et al. 2020, §3.1): given
// the ascending, distinct global positions, returns the start of the next chunk holding
// a global key whose chunk is not one of band_chunks' (k0 outside [skip.begin,
// skip.end)), or -1 when none is left. `*cursor` (start at 0) advances past every position used,
// and a chunk holding several globals is returned once — set semantics (contract §2).
SPARSEATTN_HD int64_t next_global_chunk(const int64_t* global_sorted, int64_t num_global,
                                        int64_t* cursor, ChunkRange skip, int64_t chunk) {
  while (*cursor < num_global) {
    const int64_t k0 = round_down(global_sorted[*cursor], chunk);
    // Skip the rest of this chunk's globals: they are covered by the same visit.
    while (*cursor < num_global && global_sorted[*cursor] < k0 + chunk) ++*cursor;
    if (k0 < skip.begin || k0 >= skip.end) return k0;
  }
  return -1;
}

// c05's dilated window by residue classes. With dilation d, query i (position
// p = i + seq_len_k - seq_len_q) attends only keys j = p + d*t, all congruent to p
// mod d. Grouping rows by i mod d makes each group a plain (undilated) band over keys
// of one residue class, so a block visits only keys it may attend instead of the d
// times wider contiguous span. Block x (of dilation * blocks_per_class) owns rows
// rho + d*u for u in [u0, u0 + Br), rho = x / blocks_per_class.
SPARSEATTN_HD int64_t dilated_blocks_per_class(int64_t seq_len_q, int64_t dilation,
                                               int64_t block_rows) {
  return blocks_of(blocks_of(seq_len_q, dilation), block_rows);
}
SPARSEATTN_HD Strided dilated_rows(const BandParams& b, int64_t block, int64_t block_rows) {
  const int64_t per_class = dilated_blocks_per_class(b.seq_len_q, b.dilation, block_rows);
  const int64_t rho = block / per_class;
  Strided rows;
  rows.first = rho + b.dilation * ((block % per_class) * block_rows);
  rows.stride = b.dilation;
  rows.count = rows.first >= b.seq_len_q
                   ? 0
                   : min64(block_rows, blocks_of(b.seq_len_q - rows.first, b.dilation));
  return rows;
}
// Every key the rows may attend through the band, one residue class: a superset that
// band_allows() then filters exactly (the band may be clipped differently per row).
SPARSEATTN_HD Strided dilated_keys(const BandParams& b, const Strided& rows) {
  Strided keys;
  keys.stride = b.dilation;
  keys.first = 0;
  keys.count = 0;
  if (rows.count == 0) return keys;
  const int64_t offset = b.seq_len_k - b.seq_len_q;
  int64_t lo = rows.first + offset - b.dilation * b.window;
  int64_t hi = rows.at(rows.count - 1) + offset + (b.causal ? 0 : b.dilation * b.window);
  if (lo < 0) lo += b.dilation * ceil_div(-lo, b.dilation);  // first in-range key, same class
  if (hi > b.seq_len_k - 1) hi -= b.dilation * ceil_div(hi - (b.seq_len_k - 1), b.dilation);
  keys.first = lo;
  keys.count = hi >= lo ? (hi - lo) / b.dilation + 1 : 0;
  return keys;
}

// A kernel's query block inside the pattern's tiles. Block-sparse kernels (c07, c08)
// give every layout query tile ceil(tile / Br) blocks, so a block never straddles two
// tiles and reads exactly one row of the tile table. Rows [i0, i1) may be empty for the
// last blocks of a short final tile; such blocks return at once.
struct TileBlock {
  int64_t qt;   // layout query tile
  int64_t i0;   // first query row
  int64_t i1;   // one past the last query row
};
SPARSEATTN_HD int64_t blocks_per_tile(int64_t tile, int64_t block_rows) {
  return blocks_of(tile, block_rows);
}
SPARSEATTN_HD TileBlock tile_block(int64_t block, int64_t tile, int64_t block_rows,
                                   int64_t seq_len_q) {
  const int64_t per_tile = blocks_per_tile(tile, block_rows);
  TileBlock t;
  t.qt = block / per_tile;
  t.i0 = t.qt * tile + (block % per_tile) * block_rows;
  t.i1 = min64(min64(t.i0 + block_rows, (t.qt + 1) * tile), seq_len_q);
  if (t.i1 < t.i0) t.i1 = t.i0;
  return t;
}

// contract §2 key padding, the same rule as Pattern::query_valid / key_valid: key j of
// batch b must be real, and query i (at key position p = i + seq_len_k - seq_len_q) is
// real when p has no padding entry or its entry is real. key_valid: [batch, seq_len_k]
// bytes, nonzero = real; nullptr = no padding.
SPARSEATTN_HD bool padding_allows(const uint8_t* key_valid, int64_t seq_len_q,
                                  int64_t seq_len_k, int64_t b, int64_t i, int64_t j) {
  if (key_valid == nullptr) return true;
  const uint8_t* row = key_valid + b * seq_len_k;
  const int64_t p = i + seq_len_k - seq_len_q;
  const bool query_real = p < 0 || p >= seq_len_k || row[p] != 0;
  return query_real && row[j] != 0;
}

// Grid of one launch: x = query blocks, y = heads, z = batch (CUDA's limits: x < 2^31,
// y and z <= 65535). Host only. Throws InvalidArgument naming the dimension.
struct Grid {
  int64_t x, y, z;
};
inline Grid attention_grid(int64_t num_query_blocks, int64_t num_heads, int64_t batch) {
  require(num_query_blocks >= 1 && num_query_blocks <= 2147483647LL, "seq_len_q blocks",
          num_query_blocks, "a CUDA grid holds 1 .. 2^31-1 query blocks");
  require(num_heads >= 1 && num_heads <= 65535, "num_heads", num_heads,
          "the CUDA kernels launch one grid row per head: 1 .. 65535");
  require(batch >= 1 && batch <= 65535, "batch", batch,
          "the CUDA kernels launch one grid layer per batch element: 1 .. 65535");
  return Grid{num_query_blocks, num_heads, batch};
}

}  // namespace cuda
}  // namespace sparseattn
