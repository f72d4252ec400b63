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

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "pattern/band.h"
#include "pattern/hd.h"

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
  b.left = seq_len_q + seq_len_k;
  b.right = seq_len_q + seq_len_k;
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

// The band's rule without a division, for pairs whose offset j - p is known to be a
// multiple of the dilation — always true at dilation 1 (the dense band, c03/c04) and by
// construction for c05, whose rows and keys are of one residue class. band_allows()
// spends two 64-bit divisions per pair on that residue test; this spends none:
// key j in [0, seq_len_k) and j - p in [lo, hi].
struct BandRange {
  int64_t offset;  // p - i = seq_len_k - seq_len_q
  int64_t lo, hi;  // allowed j - p: [-dilation * left, dilation * (causal ? 0 : right)]
  int64_t seq_len_k;
};
SPARSEATTN_HD BandRange band_range(const BandParams& b) {
  BandRange r;
  r.offset = b.seq_len_k - b.seq_len_q;
  r.lo = -band_reach_left(b);
  r.hi = band_reach_right(b);
  r.seq_len_k = b.seq_len_k;
  return r;
}
SPARSEATTN_HD bool band_range_allows(const BandRange& r, int64_t i, int64_t j) {
  const int64_t delta = j - i - r.offset;
  return j >= 0 && j < r.seq_len_k && delta >= r.lo && delta <= r.hi;
}
// Whether every (row, key) pair of a chunk lies inside the band (same precondition as
// band_range_allows): then the flash block skips the per-pair predicate altogether. Only
// the extreme pairs need checking: j - p is smallest at (last row, first key) and largest
// at (first row, last key). Strides are positive; an empty run is never "inside".
SPARSEATTN_HD bool chunk_inside_band(const BandRange& r, const Strided& rows, const Strided& keys) {
  if (rows.count <= 0 || keys.count <= 0) return false;
  const int64_t k_first = keys.first, k_last = keys.at(keys.count - 1);
  const int64_t p_first = rows.first + r.offset, p_last = rows.at(rows.count - 1) + r.offset;
  return k_first >= 0 && k_last < r.seq_len_k && k_first - p_last >= r.lo && k_last - p_first <= r.hi;
}

// 32-bit division by a divisor fixed before the launch, without a divide instruction:
// n / d = umulhi(n, mul) >> shr for every n in [0, 2^31) (Granlund & Montgomery 1994,
// §4, the round-up method; the form CUTLASS's FastDivmod uses). The flash blocks' staging
// loops split a flat index e into (row, column) = (e / D, e % D) with it; the int64 `/`
// and `%` they had compiled to calls of the 64-bit division routine in every iteration.
// make_fast_div runs on the host (AttnArgs carries the result); d in [1, 2^31).
struct FastDiv {
  uint32_t divisor = 1;
  uint32_t mul = 0;
  uint32_t shr = 0;
};
inline FastDiv make_fast_div(int64_t d) {
  require(d >= 1 && d < (int64_t{1} << 31), "divisor", d, "FastDiv takes 1 .. 2^31-1");
  FastDiv f;
  f.divisor = static_cast<uint32_t>(d);
  if (d == 1) return f;
  uint32_t log2_ceil = 0;
  while ((int64_t{1} << log2_ceil) < d) ++log2_ceil;
  const uint32_t p = 31 + log2_ceil;
  f.mul = static_cast<uint32_t>(((uint64_t{1} << p) + static_cast<uint64_t>(d) - 1) / static_cast<uint64_t>(d));
  f.shr = p - 32;
  return f;
}
SPARSEATTN_HD uint32_t umulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}
// n / d for n in [0, 2^31).
SPARSEATTN_HD uint32_t fast_div(const FastDiv& f, uint32_t n) {
  return f.divisor == 1 ? n : umulhi32(n, f.mul) >> f.shr;
}

// Bank-conflict-free column order for flash_mma.cuh's per-row loops. Two lanes share a
// row (lane = 2*lr + p, lr = local row 0..15, p = 0/1) and walk its 2*half columns; at
// step t lane (lr, p) takes column 2*u + p, u = (t + lr/8) mod half. With a row stride of
// ld 32-bit words, ld = 4 * odd (mod 32) — 68 for the score tile, pad16(Dv) + 4 for the
// output — the 32 lanes' words at one step are lr*ld + 2u + p: lr mod 8 spreads them over
// 8 multiples of 4, lr/8 and p over the 4 words in between: 32 different banks. The
// old order (lane p took columns [p*half, (p+1)*half), row stride 68) put both lanes of a
// pair and rows lr, lr+8 on one bank: 4-way conflicts. Proven by tests/cuda/cuda_tiling_test.cpp.
SPARSEATTN_HD int pair_column(int lane, int t, int half) {
  int u = t + ((lane >> 4) & 1);
  if (u >= half) u -= half;
  return 2 * u + (lane & 1);
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
  int64_t lo = rows.first + offset - band_reach_left(b);
  int64_t hi = rows.at(rows.count - 1) + offset + band_reach_right(b);
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

// The heavy-first, split-K schedule (packed_pattern.h: plan_schedule) drives the
// block-sparse kernels' grid. Entry e names one (head, query tile) — or, for a tile whose
// list of key tiles is long (Longformer's global rows, BigBird's first and last block),
// one PART of that list: `parts` entries split the listed tiles into contiguous ranges
// (split_range), each written to its own workspace slot, and a merge kernel combines the
// parts with the lse algebra below (split-K, as FlashDecoding does over keys). Each entry
// is served by `per_entry` consecutive thread blocks (blocks_per_tile of the largest
// tile): blockIdx.x = e * per_entry + sub. Entries are ordered by work per part,
// descending, and blocks are dispatched roughly in blockIdx order, so the heaviest
// blocks start first.
struct ScheduleEntry {
  int32_t head;
  int32_t tile;   // query tile
  int32_t part;   // 0 .. parts-1
  int32_t parts;  // 1: the whole list, written straight to o / lse
  int64_t slot;   // workspace slot of this part; -1 when parts == 1
};
// One split (head, query tile): its parts' slots are slot .. slot + parts - 1.
struct SplitGroup {
  int32_t head;
  int32_t tile;
  int32_t parts;
  int32_t unused = 0;
  int64_t slot;
};
// Part `part` of `parts` of the listed-tile range [begin, end): contiguous, in order, and
// together exactly [begin, end) (the first n mod parts parts one tile shorter or not:
// [begin + n*part/parts, begin + n*(part+1)/parts)).
struct EntryRange {
  int64_t begin, end;
};
SPARSEATTN_HD EntryRange split_range(int64_t begin, int64_t end, int64_t part, int64_t parts) {
  const int64_t n = end - begin;
  EntryRange r;
  r.begin = begin + n * part / parts;
  r.end = begin + n * (part + 1) / parts;
  return r;
}

// The split-K merge (the same lse algebra as the tiled reference): parts over disjoint key
// sets, each with its normalized output o_p and lse_p = m_p + log l_p (-inf when the part
// allowed no key), combine to lse = log sum_p exp(lse_p) and o = sum_p exp(lse_p - lse) o_p.
// Computed around the largest lse_p so no exp overflows; every part -inf -> -inf (the row
// is fully masked: o = 0, contract §2). Proven against the float64 oracle on the host.
SPARSEATTN_HD float exp_of(float x) { return expf(x); }
SPARSEATTN_HD double exp_of(double x) { return exp(x); }
SPARSEATTN_HD float log_of(float x) { return logf(x); }
SPARSEATTN_HD double log_of(double x) { return log(x); }
template <class Real>
SPARSEATTN_HD Real merge_lse(const Real* lse, int64_t parts, int64_t stride) {
  Real m = -INFINITY;
  for (int64_t p = 0; p < parts; ++p) m = lse[p * stride] > m ? lse[p * stride] : m;
  if (m == -INFINITY) return m;
  Real sum = 0;
  for (int64_t p = 0; p < parts; ++p)
    if (lse[p * stride] != -INFINITY) sum += exp_of(lse[p * stride] - m);
  return m + log_of(sum);
}
// The weight of part p in the merged output: exp(lse_p - lse), 0 for an empty part.
template <class Real>
SPARSEATTN_HD Real merge_weight(Real lse_part, Real lse_merged) {
  return lse_part == -INFINITY ? Real(0) : exp_of(lse_part - lse_merged);
}

// Rows of sub-block `sub` of query tile qt: [qt*tile + sub*Br, ...) clipped to the tile and
// the sequence; empty when sub is past the tile (a head with a smaller tile than the
// largest one).
SPARSEATTN_HD TileBlock scheduled_block(int64_t qt, int64_t sub, int64_t tile, int64_t block_rows,
                                        int64_t seq_len_q) {
  TileBlock t;
  t.qt = qt;
  t.i0 = qt * tile + sub * block_rows;
  t.i1 = min64(min64(t.i0 + block_rows, (qt + 1) * tile), seq_len_q);
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
