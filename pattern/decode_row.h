// The keys one query row of a sequence attends, as one arithmetic progression — the rule
// every kernel that reads a layout in place shares (contract §2.10–§2.12): the decode
// kernels (cpu_k09_decode, cuda_c09_decode through optimized/cuda/decode_plan.h) and the
// packed-batch kernel cuda_c11_varlen (optimized/cuda/varlen_plan.h). Written once here so
// the CPU and CUDA paths cannot drift; tests/reference/decode_row_test.cpp checks it by hand
// and against the materialized pattern.
//
// Units: rows and keys are positions inside ONE sequence (0-based), never packed offsets.
// A sequence has seq_len_q query rows and n existing keys (n = cache_seqlens[b] for a cache,
// contract §2.11–§2.12; n = seq_len_k(b) for a packed batch, §2.10); query i sits at
// p = i + n − seq_len_q (bottom-right against the filled length), and the spec's rule runs on
// those logical positions. Keys >= n do not exist, so no row ever reaches one.
#pragma once

#include <cstdint>

#include "pattern/band.h"
#include "pattern/hd.h"
#include "pattern/spec.h"

namespace sparseattn {

// The keys of one query row: j = lo + stride·t, lo <= j <= hi (empty when lo > hi).
// Keys are local to the sequence: 0 <= lo, hi < n.
struct DecodeRowKeys {
  int64_t lo = 0, hi = -1, stride = 1;
};

// Whether the row attends key j (stride 1 needs no division; the kernels index keys with
// int32, so j − lo fits, pack_pattern / plan_varlen refuse larger sequences).
SPARSEATTN_HD bool decode_row_allows(const DecodeRowKeys& r, int64_t j) {
  if (j < r.lo || j > r.hi) return false;
  return r.stride == 1 || static_cast<int32_t>(j - r.lo) % static_cast<int32_t>(r.stride) == 0;
}

// Whether decode_row_keys describes `spec` exactly: dense (§3.2), window (§3.3, any
// dilation, left/right) and chunked (§3.14), causal or not, one spec for every head
// (no per_head) and no key padding mask (the layout says which keys exist).
bool decode_row_rule_covers(const PatternSpec& spec);

// Row i (0 <= i < seq_len_q) of a sequence with seq_len_q queries and n >= 0 keys under
// `spec` (decode_row_rule_covers(spec)): position p = i + n − seq_len_q (contract §2.11),
// then dense: keys [0, n − 1], causal [0, min(p, n − 1)]; window: p + dilation·t for the
// band's steps t (band.h, band_of(spec, seq_len_q, n)); chunked: the chunk of size c holding
// p, [⌊p/c⌋·c, min(⌊p/c⌋·c + c − 1, n − 1)], causal cut at p, none when p < 0. n = 0: empty.
// `band` must be band_of(spec, seq_len_q, n) for a window spec (a caller computing many
// rows of one sequence passes it once); it is not read for the other kinds.
DecodeRowKeys decode_row_keys(const PatternSpec& spec, const BandParams& band, int64_t seq_len_q,
                              int64_t n, int64_t i);

// The same, computing the band itself.
DecodeRowKeys decode_row_keys(const PatternSpec& spec, int64_t seq_len_q, int64_t n, int64_t i);

}  // namespace sparseattn
