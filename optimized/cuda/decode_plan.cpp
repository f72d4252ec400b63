#include "optimized/cuda/decode_plan.h"

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace sparseattn {
namespace cuda {

namespace {
int64_t g_decode_split_keys = 0;
}  // namespace

int64_t decode_split_keys() { return g_decode_split_keys; }
void set_decode_split_keys(int64_t keys) { g_decode_split_keys = keys; }

DecodePlan plan_decode(const PatternSpec& spec, int64_t seq_len_q, const std::vector<int64_t>& seqlens,
                       int64_t floats_per_item, int64_t split_keys) {
  const int64_t batch = static_cast<int64_t>(seqlens.size());
  DecodePlan plan;
  plan.rows.assign(static_cast<size_t>(batch * seq_len_q), DecodeRowKeys{});
  std::vector<int64_t> span_lo(static_cast<size_t>(batch), 0), span_hi(static_cast<size_t>(batch), -1);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = seqlens[static_cast<size_t>(b)];
    if (n == 0) continue;  // no key: every row of the element is empty (§2.3)
    span_lo[b] = n;
    for (int64_t i = 0; i < seq_len_q; ++i) {
      DecodeRowKeys& r = plan.rows[static_cast<size_t>(b * seq_len_q + i)];
      r = decode_row_keys(spec, seq_len_q, n, i);
      if (r.lo > r.hi) continue;
      span_lo[b] = std::min(span_lo[b], r.lo);
      span_hi[b] = std::max(span_hi[b], r.hi);
    }
  }
  auto splits_of = [&](int64_t b, int64_t keys) {
    return span_hi[b] >= span_lo[b] ? (span_hi[b] - span_lo[b] + keys) / keys : int64_t{0};
  };
  auto total = [&](int64_t keys) {
    int64_t t = 0;
    for (int64_t b = 0; b < batch; ++b) t += splits_of(b, keys);
    return t;
  };
  int64_t keys = split_keys > 0 ? split_keys : kDecodeSplitKeys;
  if (split_keys <= 0)
    while (total(keys) * floats_per_item > kDecodeWorkspaceFloats && total(keys) > batch) keys *= 2;
  plan.split_keys = keys;
  require(total(keys) <= INT32_MAX, "cache_seqlens", total(keys),
          "the decode grid holds at most 2^31-1 splits (elements x keys / split_keys)");
  plan.item_start.assign(static_cast<size_t>(batch + 1), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t splits = splits_of(b, keys);
    for (int64_t s = 0; s < splits; ++s) {
      DecodeItem it;
      it.b = static_cast<int32_t>(b);
      it.split = static_cast<int32_t>(s);
      it.j0 = span_lo[b] + s * keys;
      it.j1 = std::min(it.j0 + keys, span_hi[b] + 1);
      plan.items.push_back(it);
    }
    plan.item_start[b + 1] = static_cast<int32_t>(plan.items.size());
  }
  return plan;
}

bool decode_serves(const Pattern& pattern) {
  const PatternSpec& s = pattern.spec;
  return decode_row_rule_covers(s) && !pattern.has_key_padding();
}

}  // namespace cuda
}  // namespace sparseattn
