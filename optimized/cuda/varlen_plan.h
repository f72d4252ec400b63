// The host half of c11, the packed-batch kernel (contract §2.10): which keys each query row
// of each sequence attends, and the grid's tiles. Pure C++ (no CUDA), built on every
// machine, so tests/cuda/cuda_tiling_test.cpp proves it against the sequences and the
// materialized pattern without a GPU.
//
// Sequence b holds seq_len_q(b) = cu_seqlens_q[b+1] − cu_seqlens_q[b] queries and
// seq_len_k(b) keys, each aligned bottom-right on its own positions (query i at
// p = i + seq_len_k(b) − seq_len_q(b)); row i of b attends the progression
// pattern/decode_row.h gives for (seq_len_q(b), seq_len_k(b)) — the rule the decode kernels
// read too. A tile is kVarlenTileRows consecutive query rows of one sequence (the last one
// of a sequence shorter); the tiles are sequence-major, and sequence b's are
// [tile_start[b], tile_start[b+1]) — a prefix over ⌈seq_len_q(b) / tile_rows⌉, as
// FlashAttention's varlen scheduling walks the packed batch. An empty sequence has no
// tile; a sequence with queries but no keys has tiles with an empty key span (its rows are
// fully masked: o = 0, lse = −∞, σ_h with a sink; contract §2.3, §2.9).
#pragma once

#include <cstdint>
#include <vector>

#include "core/seq_layout.h"
#include "pattern/decode_row.h"
#include "pattern/pattern.h"

namespace sparseattn {
namespace cuda {

// Query rows per tile: GatherF32Block's 32 rows (gather_f32.cuh), one thread block per
// (tile, query head).
constexpr int64_t kVarlenTileRows = 32;

// Query rows [i0, i0 + rows) of sequence b and the keys [j0, j1) their progressions span
// (sequence-local positions; j0 >= j1: no row has a key).
struct VarlenTile {
  int32_t b = 0, i0 = 0, rows = 0;
  int64_t j0 = 0, j1 = 0;
};

struct VarlenPlan {
  std::vector<DecodeRowKeys> rows;  // [total_q]: row i of sequence b at cu_seqlens_q[b] + i
  std::vector<VarlenTile> tiles;    // sequence-major, rows in order
  std::vector<int32_t> tile_start;  // [B + 1]
};

// The plan of `varlen` (validated: validate_varlen) under `spec` (decode_row_rule_covers).
// tile_rows in [1, kVarlenTileRows]. Throws InvalidArgument naming cu_seqlens_q when a
// sequence holds 2^31 or more queries or the tiles do not fit a grid (2^31 − 1), naming
// cu_seqlens_k when a sequence holds 2^31 or more keys (the kernel's key arithmetic is int32).
VarlenPlan plan_varlen(const PatternSpec& spec, const Varlen& varlen, int64_t tile_rows = kVarlenTileRows);

// A plain batch [B, H, L, d] as B sequences of seq_len_q queries and seq_len_k keys each:
// cu_seqlens_q = {0, L_q, 2·L_q, …}, cu_seqlens_k = {0, L_k, …} — how c11 reads a plain
// problem (the registry runs every kernel on those too).
Varlen plain_varlen(int64_t batch, int64_t seq_len_q, int64_t seq_len_k);

// The patterns c11 serves: dense, window (any dilation, left/right) and chunked, causal or
// not; one spec for every head; no key padding (decode_row_rule_covers).
bool varlen_serves(const Pattern& pattern);

}  // namespace cuda
}  // namespace sparseattn
