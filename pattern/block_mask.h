// FlexAttention's BlockMask tables and the selected-blocks pattern (contract §3.17): the
// export (a materialized pattern -> the four tables `Pattern.block_mask` writes) and its
// inverse, the import (the four tables -> `block_indices`). FlexAttention's names and
// layout: kv_num_blocks [B, H, Q_blocks] and kv_indices [B, H, Q_blocks, KV_blocks] (the
// partial blocks, which a mask_mod refines per token), full_kv_num_blocks / full_kv_indices
// the same for full blocks; the first kv_num_blocks entries of a row are read, the rest
// are padding of any value (torch.nn.attention.flex_attention.BlockMask.from_kv_blocks).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn {

// FlexAttention's default BLOCK_SIZE, tokens per block side (_DEFAULT_SPARSE_BLOCK_SIZE).
inline constexpr int64_t kFlexBlockSize = 128;

// The four tables, int64 (FlexAttention stores int32; every value fits).
struct BlockMaskTables {
  Tensor<int64_t> kv_num_blocks;       // [B, H, Q_blocks]
  Tensor<int64_t> kv_indices;          // [B, H, Q_blocks, KV_blocks]
  Tensor<int64_t> full_kv_num_blocks;  // same shapes; empty (numel 0) = no full pair
  Tensor<int64_t> full_kv_indices;
};

// How errors name the four arguments: Python's keywords by default; the CLI passes the
// file names it read them from ("--block-mask bm/kv_indices.npy").
struct BlockMaskNames {
  std::string kv_num_blocks = "kv_num_blocks";
  std::string kv_indices = "kv_indices";
  std::string full_kv_num_blocks = "full_kv_num_blocks";
  std::string full_kv_indices = "full_kv_indices";
};

// The export: per (head, query tile) of `pattern` (batch 1, every head's layout tiled at
// `block_size`, or one tile per side when block_size exceeds both lengths) the key tiles
// that are partial (kv_*) and full (full_kv_*), ascending, padded with 0. Shapes [1, H, nq]
// and [1, H, nq, nk], nq = ceil(seq_len_q / block_size), nk = ceil(seq_len_k / block_size).
// Throws InvalidArgument("block_size") when a layout is tiled otherwise.
BlockMaskTables block_mask_of(const Pattern& pattern, int64_t block_size);

// The import (contract §3.17): `block_indices` [B, H, Q_blocks, K] of selected-blocks, row
// (b, h, m) the union of the first kv_num_blocks[b,h,m] entries of kv_indices[b,h,m,:] and,
// when the full pair is given, the first full_kv_num_blocks[b,h,m] of full_kv_indices,
// ascending, each block once, then -1; K = the longest union, at least 1. A partial block
// comes back whole (the mask_mod's per-token detail is not in the tables), so the import
// inverts block_mask_of() exactly only for patterns made of whole blocks. The block sizes
// are not read here: selected-blocks takes block_size_q = block_size_k = BLOCK_SIZE (or
// FlexAttention's pair) beside the table.
// Throws InvalidArgument naming the argument (`names`): kv_num_blocks not of rank 3 or
// kv_indices not [B, H, Q_blocks, KV_blocks] with kv_num_blocks's B, H, Q_blocks (every
// dimension >= 1); only one of the full pair, or a full table of another shape; a count
// outside [0, KV_blocks]; a read index outside [0, KV_blocks). Entries past the count are
// never read, whatever their value. Cost: O(B·H·Q_blocks·KV_blocks).
Tensor<int64_t> block_indices_from_block_mask(const Tensor<int64_t>& kv_num_blocks,
                                              const Tensor<int64_t>& kv_indices,
                                              const Tensor<int64_t>* full_kv_num_blocks,
                                              const Tensor<int64_t>* full_kv_indices,
                                              const BlockMaskNames& names = {});

}  // namespace sparseattn
