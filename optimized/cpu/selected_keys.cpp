// What the selected-attention kernels share outside the SIMD builds (contract §3.16): the
// pattern check and the per-query key list (selected_kernels.h). k08's two builds
// (isa_kernels.h) and kb03 call them; they hold no vector code, so they are compiled once
// at the build's floor.
#include <algorithm>
#include <string>
#include <vector>

#include "optimized/cpu/selected_kernels.h"

namespace sparseattn::cpu {

bool k08_serves(const Pattern& pattern) { return pattern.spec.kind == PatternKind::selected; }

void selected_keys(const Pattern& pattern, int64_t b, int64_t row, int64_t i,
                   std::vector<int32_t>& keys, std::vector<float>& weights,
                   std::vector<int32_t>& seen) {
  keys.clear();
  weights.clear();
  if (!pattern.query_valid(b, i)) return;
  const Tensor<int64_t>& t = pattern.selection;
  const int64_t kk = t.dim(3), lk = pattern.sizes.seq_len_k;
  const int64_t position = i + lk - pattern.sizes.seq_len_q;  // p, contract §3.1
  const bool count = pattern.spec.duplicates == Duplicates::count;
  const int64_t* list = t.ptr() + ((((t.dim(0) == 1 ? 0 : b) * t.dim(1) + row) * t.dim(2)) + i) * kk;
  // The last allowed key and the padding row, once per list rather than per entry (the
  // checks per entry were a tenth of k08's time at DSA's shape).
  const int64_t last = pattern.spec.causal ? std::min(position, lk - 1) : lk - 1;
  const uint8_t* pad =
      pattern.spec.key_padding_mask ? pattern.spec.key_padding_mask->data.data() + b * lk : nullptr;
  for (int64_t c = 0; c < kk; ++c) {
    const int64_t j = list[c];
    if (j < 0 || j > last || (pad != nullptr && pad[j] == 0)) continue;
    int32_t& at = seen[static_cast<size_t>(j)];
    if (at >= 0) {
      if (count) weights[static_cast<size_t>(at)] += 1.0f;
      continue;
    }
    at = static_cast<int32_t>(keys.size());
    keys.push_back(static_cast<int32_t>(j));
    weights.push_back(1.0f);
  }
  for (int32_t j : keys) seen[static_cast<size_t>(j)] = -1;
}

}  // namespace sparseattn::cpu
