#include "optimized/cuda/device_pattern.h"

#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

DevicePattern upload_pattern(const Pattern& pattern) {
  DevicePattern d;
  d.packed = pack_pattern(pattern);
  const PackedPattern& p = d.packed;
  d.row_ptr.upload(p.row_ptr);
  d.col.upload(p.col);
  d.bits_at.upload(p.bits_at);
  d.bits.upload(p.bits);
  d.key_valid.upload(p.key_valid);
  d.schedule.upload(p.schedule);
  d.split_groups.upload(p.split_groups);
  d.sel_row_ptr.upload(p.sel_row_ptr);
  d.sel_key.upload(p.sel_key);
  d.sel_count.upload(p.sel_count);
  std::vector<HeadView> views;
  for (int64_t h = 0; h < p.num_heads; ++h)
    views.push_back(head_view(p, h, d.row_ptr.ptr(), d.col.ptr(), d.bits_at.ptr(), d.bits.ptr()));
  d.heads.upload(views);
  return d;
}

void DevicePattern::bind(AttnArgs& args) const {
  args.key_valid = key_valid.ptr();
  args.heads = heads.ptr();
  args.schedule = schedule.ptr();
  args.num_scheduled = static_cast<int64_t>(packed.schedule.size());
  args.split_groups = split_groups.ptr();
  args.num_split_groups = static_cast<int64_t>(packed.split_groups.size());
  args.num_slots = packed.num_slots;
  args.max_tile = packed.max_tile;
  args.sel_row_ptr = sel_row_ptr.ptr();
  args.sel_key = sel_key.ptr();
  args.sel_count = sel_count.ptr();
  args.sel_batch = packed.sel_batch;
  args.sel_heads = packed.sel_heads;
  args.band = packed.has_band ? packed.band
                              : dense_band(packed.seq_len_q, packed.seq_len_k, packed.causal);
}

}  // namespace cuda
}  // namespace sparseattn
