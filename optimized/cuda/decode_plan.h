// The host half of c09, the decode kernel (contract §2.11–§2.12): which keys each query row
// of an element attends, and the grid's work items. Pure C++ (no CUDA), built on every
// machine, so tests/cuda/cuda_tiling_test.cpp proves it against the materialized pattern
// without a GPU.
//
// Element b holds n_b = cache_seqlens[b] keys (L_k for plain inputs); query i sits at
// p = i + n_b − L_q and attends the keys the spec gives for (L_q, n_b): one arithmetic
// progression lo, lo + stride, … ≤ hi per row for dense (§3.2), window (§3.3, band.h) and
// chunked (§3.14) — pattern/decode_row.h, the rule the CPU twin cpu_k09_decode reads too.
// A work item is (element, split): a fixed run of split_keys keys of the union of the
// element's rows, taken by one thread block per kv head for all g·L_q rows of that kv head
// (c09_decode.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "pattern/decode_row.h"
#include "pattern/hd.h"
#include "pattern/pattern.h"

namespace sparseattn {
namespace cuda {

// Each row's keys: the shared rule of pattern/decode_row.h (DecodeRowKeys, decode_row_keys,
// decode_row_allows), named here too for the c09 code and tests that spell them cuda::.
using sparseattn::DecodeRowKeys;
using sparseattn::decode_row_allows;
using sparseattn::decode_row_keys;

// One thread block's keys per kv head: [j0, j1) of element b, its split-th split.
struct DecodeItem {
  int32_t b = 0, split = 0;
  int64_t j0 = 0, j1 = 0;
};

// Keys per split when no split is forced: 256 (as the CPU twin), doubled while the
// workspace (every item's partial o and lse) would exceed kDecodeWorkspaceFloats.
constexpr int64_t kDecodeSplitKeys = 256;
constexpr int64_t kDecodeWorkspaceFloats = int64_t{1} << 24;

struct DecodePlan {
  std::vector<DecodeRowKeys> rows;  // [batch * seq_len_q]: row i of element b at b * L_q + i
  std::vector<DecodeItem> items;    // element-major, splits in order
  std::vector<int32_t> item_start;  // [batch + 1]: element b's items [item_start[b], item_start[b+1])
  int64_t split_keys = 0;
};

// The plan for elements of seqlens[b] keys. floats_per_item: the workspace one item needs
// (num_kv_heads · g · L_q · (head_dim_v + 1)). split_keys >= 1 forces the split (tests); 0
// chooses it (kDecodeSplitKeys, doubled while the workspace is over budget; a function of
// the problem only, never of the device). Throws InvalidArgument when the items do not fit
// a grid (2^31 − 1).
DecodePlan plan_decode(const PatternSpec& spec, int64_t seq_len_q, const std::vector<int64_t>& seqlens,
                       int64_t floats_per_item, int64_t split_keys = 0);

// The patterns c09 serves, those of cpu_k09_decode: dense, window (any dilation,
// left/right) and chunked, causal or not; no per-head mixture, no key padding.
bool decode_serves(const Pattern& pattern);

// The split forced on plan_decode by the c09 launcher, process-wide: 0 (automatic) by
// default. For tests that must exercise many splits on small problems. Not thread-safe.
int64_t decode_split_keys();
void set_decode_split_keys(int64_t keys);

}  // namespace cuda
}  // namespace sparseattn
