// The one upload helper for patterns: copies a PackedPattern (packed_pattern.h) to the
// device once per Problem and hands the kernels views of it. Kernels read these arrays
// and nothing else about the pattern.
#pragma once

#include <vector>

#include "optimized/cuda/device_runtime.h"
#include "optimized/cuda/kernel_args.h"
#include "optimized/cuda/packed_pattern.h"

namespace sparseattn {
namespace cuda {

struct DevicePattern {
  PackedPattern packed;  // the host copy, for sizes and launch decisions
  DeviceBuffer<int64_t> row_ptr, bits_at;
  DeviceBuffer<ScheduleEntry> schedule;
  DeviceBuffer<SplitGroup> split_groups;
  DeviceBuffer<int32_t> col;
  DeviceBuffer<uint64_t> bits;
  DeviceBuffer<uint8_t> key_valid;
  DeviceBuffer<int64_t> sel_row_ptr;              // selected only (PackedPattern::sel_*)
  DeviceBuffer<int32_t> sel_key, sel_count;
  DeviceBuffer<HeadView> heads;  // [num_heads], pointing into the buffers above

  // Fills the pattern fields of `args` (key_valid, heads, schedule, band, the selected lists).
  void bind(AttnArgs& args) const;
};

// Packs and uploads `pattern`. Throws RuntimeError (CUDA failure) or InvalidArgument
// (sizes beyond the kernels' indices, from pack_pattern).
DevicePattern upload_pattern(const Pattern& pattern);

}  // namespace cuda
}  // namespace sparseattn
