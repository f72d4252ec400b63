// FlexAttention's BlockMask tables <-> selected-blocks (pattern/block_mask.h, contract §3.17).
#include "pattern/block_mask.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace sparseattn {

namespace {

// "[b,h,m]" of a count, "[b,h,m,s]" of an index.
std::string index_text(int64_t b, int64_t h, int64_t m, int64_t s = -1) {
  return "[" + std::to_string(b) + "," + std::to_string(h) + "," + std::to_string(m) +
         (s >= 0 ? "," + std::to_string(s) : std::string()) + "]";
}

// The shape checks, before any entry is read.
void check_pair(const Tensor<int64_t>& num, const Tensor<int64_t>& idx, const std::string& num_name,
                const std::string& idx_name) {
  bool ok = num.rank() == 3;
  for (size_t d = 0; ok && d < 3; ++d) ok = num.dim(d) >= 1;
  require(ok, num_name + " shape", shape_text(num.shape),
          "must be [B, H, Q_blocks], every dimension >= 1 (FlexAttention's kv_num_blocks)");
  const std::string want = "[" + std::to_string(num.dim(0)) + ", " + std::to_string(num.dim(1)) +
                           ", " + std::to_string(num.dim(2)) + ", KV_blocks >= 1]";
  require(idx.rank() == 4 && idx.dim(0) == num.dim(0) && idx.dim(1) == num.dim(1) &&
              idx.dim(2) == num.dim(2) && idx.dim(3) >= 1,
          idx_name + " shape", shape_text(idx.shape),
          "must be " + want + " ([B, H, Q_blocks] of " + num_name + ")");
}

// Appends row (b, h, m) of one pair to `out`: its first num[b,h,m] indices, each checked.
void read_row(const Tensor<int64_t>& num, const Tensor<int64_t>& idx, const std::string& num_name,
              const std::string& idx_name, int64_t row, std::vector<int64_t>& out) {
  const int64_t nk = idx.dim(3);
  const int64_t n = num.data[static_cast<size_t>(row)];
  const int64_t m = row % num.dim(2), h = row / num.dim(2) % num.dim(1), b = row / num.dim(2) / num.dim(1);
  if (n < 0 || n > nk)
    throw InvalidArgument(num_name + index_text(b, h, m), std::to_string(n),
                          "must be in [0, " + std::to_string(nk) + "] (the row's block count, at most " +
                              idx_name + "'s KV_blocks)");
  // Only the first n entries are FlexAttention's: the rest is padding of any value.
  for (int64_t s = 0; s < n; ++s) {
    const int64_t c = idx.data[static_cast<size_t>(row * nk + s)];
    if (c < 0 || c >= nk)
      throw InvalidArgument(idx_name + index_text(b, h, m, s), std::to_string(c),
                            "must be a key block in [0, " + std::to_string(nk) + ") (KV_blocks; read because " +
                                std::to_string(s) + " < " + num_name + index_text(b, h, m) + " = " +
                                std::to_string(n) + ")");
    out.push_back(c);
  }
}

}  // namespace

BlockMaskTables block_mask_of(const Pattern& pattern, int64_t block_size) {
  require(block_size >= 1, "block_size", block_size, "must be an integer >= 1 (tokens)");
  const PatternSizes& z = pattern.sizes;
  const int64_t nq = (z.seq_len_q + block_size - 1) / block_size;
  const int64_t nk = (z.seq_len_k + block_size - 1) / block_size;
  BlockMaskTables t;
  t.kv_num_blocks = Tensor<int64_t>({1, z.num_heads, nq}, 0);
  t.kv_indices = Tensor<int64_t>({1, z.num_heads, nq, nk}, 0);
  t.full_kv_num_blocks = Tensor<int64_t>({1, z.num_heads, nq}, 0);
  t.full_kv_indices = Tensor<int64_t>({1, z.num_heads, nq, nk}, 0);
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const HeadLayout& l = pattern.head(h);
    // A tile beyond the sequence is clamped (contract §3.11: storage only); either way
    // there is one block per side, so the tables are the same.
    require(l.tile == block_size || (l.tile >= z.seq_len_q && l.tile >= z.seq_len_k), "block_size",
            block_size, "the layout was not tiled at block_size (tile " + std::to_string(l.tile) + ")");
    for (int64_t r = 0; r < nq; ++r) {
      const int64_t row = h * nq + r;
      for (int64_t e = l.row_ptr[r]; e < l.row_ptr[r + 1]; ++e) {
        if (l.is_full(e)) t.full_kv_indices.data[row * nk + t.full_kv_num_blocks.data[row]++] = l.col[e];
        else t.kv_indices.data[row * nk + t.kv_num_blocks.data[row]++] = l.col[e];
      }
    }
  }
  return t;
}

Tensor<int64_t> block_indices_from_block_mask(const Tensor<int64_t>& kv_num_blocks,
                                              const Tensor<int64_t>& kv_indices,
                                              const Tensor<int64_t>* full_kv_num_blocks,
                                              const Tensor<int64_t>* full_kv_indices,
                                              const BlockMaskNames& names) {
  check_pair(kv_num_blocks, kv_indices, names.kv_num_blocks, names.kv_indices);
  // FlexAttention takes the full pair both or neither (from_kv_blocks).
  require((full_kv_num_blocks == nullptr) == (full_kv_indices == nullptr),
          full_kv_num_blocks ? names.full_kv_indices : names.full_kv_num_blocks, "none",
          "must be given with " + (full_kv_num_blocks ? names.full_kv_num_blocks : names.full_kv_indices) +
              " (the full pair is both or neither)");
  const bool full = full_kv_num_blocks != nullptr;
  if (full) {
    check_pair(*full_kv_num_blocks, *full_kv_indices, names.full_kv_num_blocks, names.full_kv_indices);
    require(full_kv_indices->shape == kv_indices.shape, names.full_kv_indices + " shape",
            shape_text(full_kv_indices->shape),
            "must equal " + names.kv_indices + "'s shape " + shape_text(kv_indices.shape));
  }
  const int64_t rows = kv_num_blocks.numel();
  std::vector<std::vector<int64_t>> lists(static_cast<size_t>(rows));
  int64_t slots = 1;  // K >= 1 (contract §3.17), even when every row is empty
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<int64_t>& l = lists[static_cast<size_t>(row)];
    read_row(kv_num_blocks, kv_indices, names.kv_num_blocks, names.kv_indices, row, l);
    if (full)
      read_row(*full_kv_num_blocks, *full_kv_indices, names.full_kv_num_blocks, names.full_kv_indices,
               row, l);
    // Set semantics: a block both partial and full, or listed twice, is one block.
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
    slots = std::max<int64_t>(slots, static_cast<int64_t>(l.size()));
  }
  Tensor<int64_t> out({kv_num_blocks.dim(0), kv_num_blocks.dim(1), kv_num_blocks.dim(2), slots}, -1);
  for (int64_t row = 0; row < rows; ++row) {
    const std::vector<int64_t>& l = lists[static_cast<size_t>(row)];
    std::copy(l.begin(), l.end(), out.data.begin() + row * slots);
  }
  return out;
}

}  // namespace sparseattn
