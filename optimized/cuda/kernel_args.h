// AttnArgs: what every CUDA attention kernel receives, by value, in one struct.
//   q: [batch, num_heads, seq_len_q, head_dim]   in the kernel's input dtype, row-major
//   k: [batch, num_kv_heads, seq_len_k, head_dim]   (num_heads = group * num_kv_heads)
//   v: [batch, num_kv_heads, seq_len_k, head_dim_v]
//   o: [batch, num_heads, seq_len_q, head_dim_v] float32;  lse: [batch, num_heads, seq_len_q]
// The pattern fields point at the one uploaded copy (device_pattern.h).
#pragma once

#include <cstdint>

#include "optimized/cuda/head_view.h"
#include "optimized/cuda/tiling.h"
#include "pattern/band.h"

namespace sparseattn {
namespace cuda {

struct AttnArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  float* o = nullptr;
  float* lse = nullptr;
  int64_t batch = 0, num_heads = 0, seq_len_q = 0, seq_len_k = 0, head_dim = 0, head_dim_v = 0;
  float scale = 0.f;
  // The attention of current models (contract §2.7-§2.9), read by the kernels whose registry
  // entry lists the features (the others never receive them): query head h reads kv head
  // h / group; softcap > 0 caps each scaled score; alibi [num_heads] or, with
  // alibi_per_batch, [batch, num_heads] slopes; sinks [num_heads] logits. Null / 0: none.
  int64_t num_kv_heads = 0, group = 1;
  float softcap = 0.f;
  const float* alibi = nullptr;
  bool alibi_per_batch = false;
  const float* sinks = nullptr;

  const uint8_t* key_valid = nullptr;      // [batch, seq_len_k] or null (no padding)
  const HeadView* heads = nullptr;         // [num_heads] layouts in device memory
  // Block-sparse kernels (block_sparse.cuh): the heavy-first, split-K schedule, its split
  // groups, and the workspace of the split parts: o [batch, num_slots, max_tile, head_dim_v]
  // and lse [batch, num_slots, max_tile] (DeviceProblem::split_o / split_lse).
  const ScheduleEntry* schedule = nullptr;
  int64_t num_scheduled = 0;
  const SplitGroup* split_groups = nullptr;
  int64_t num_split_groups = 0, num_slots = 0, max_tile = 1;
  float* split_o = nullptr;
  float* split_lse = nullptr;
  BandParams band;                         // window-like kinds; dense: dense_band()
  // selected (contract §3.16; packed_pattern.h: PackedPattern::sel_*): each table row's
  // distinct keys and multiplicities, row (b_sel, r, i) at sel_row_ptr[(b_sel · sel_heads +
  // r) · seq_len_q + i]; null for other kinds.
  const int64_t* sel_row_ptr = nullptr;
  const int32_t* sel_key = nullptr;
  const int32_t* sel_count = nullptr;
  int64_t sel_batch = 0, sel_heads = 0;

  // Divisions fixed before the launch (tiling.h: FastDiv), set by DeviceProblem::args():
  // head_dim and head_dim_v as they are (flash_f32.cuh) and padded to 16 (flash_mma.cuh);
  // per_entry: thread blocks per schedule entry (block_sparse.cuh sets it at launch).
  FastDiv div_d, div_dv, div_dp, div_dvp, per_entry;

  // Flat offset of row `row` of head (b, h) in a [batch, num_heads, rows, width] tensor.
  SPARSEATTN_HD int64_t offset(int64_t b, int64_t h, int64_t rows, int64_t row,
                               int64_t width) const {
    return ((b * num_heads + h) * rows + row) * width;
  }
  // contract §2.4: query i of batch element b is real unless its own position p = i + L_k −
  // L_q is a padded key (a padded query row does not exist: no sink, lse = -inf).
  SPARSEATTN_HD bool query_real(int64_t b, int64_t i) const {
    if (key_valid == nullptr) return true;
    const int64_t p = i + seq_len_k - seq_len_q;
    return p < 0 || p >= seq_len_k || key_valid[b * seq_len_k + p] != 0;
  }
  // The ALiBi slope a[b, h] (contract §2.8); only with alibi set.
  SPARSEATTN_HD float slope(int64_t b, int64_t h) const {
    return alibi[alibi_per_batch ? b * num_heads + h : h];
  }
  // The same in k or v: row `row` of the kv head that query head h reads (contract §2.7).
  SPARSEATTN_HD int64_t kv_offset(int64_t b, int64_t h, int64_t rows, int64_t row,
                                  int64_t width) const {
    return ((b * num_kv_heads + h / group) * rows + row) * width;
  }
};

}  // namespace cuda
}  // namespace sparseattn
