#include "optimized/cuda/packed_pattern.h"

#include <algorithm>
#include <climits>
#include <map>

#include "core/error.h"

namespace sparseattn {
namespace cuda {

namespace {

// The selected kind's lists (PackedPattern::sel_*): causal applied, −1 dropped, repeats
// merged into a multiplicity (counted only under duplicates = count).
void pack_selection(const Pattern& pattern, PackedPattern& p) {
  const Tensor<int64_t>& t = pattern.selection;
  const int64_t kk = t.dim(3), lq = pattern.sizes.seq_len_q, lk = pattern.sizes.seq_len_k;
  const bool count = pattern.spec.duplicates == Duplicates::count;
  p.sel_batch = t.dim(0);
  p.sel_heads = t.dim(1);
  p.sel_row_ptr.assign(1, 0);
  std::vector<int32_t> at(static_cast<size_t>(lk), -1);  // key -> its place in the row, or -1
  for (int64_t x = 0; x < p.sel_batch * p.sel_heads * lq; ++x) {
    const int64_t i = x % lq;
    const int64_t position = i + lk - lq;  // p, contract §3.1
    const int64_t* list = t.ptr() + x * kk;
    const size_t first = p.sel_key.size();
    for (int64_t c = 0; c < kk; ++c) {
      const int64_t j = list[c];
      if (j < 0 || (pattern.spec.causal && j > position)) continue;
      int32_t& slot = at[static_cast<size_t>(j)];
      if (slot >= 0) {
        if (count) ++p.sel_count[first + static_cast<size_t>(slot)];
        continue;
      }
      slot = static_cast<int32_t>(p.sel_key.size() - first);
      p.sel_key.push_back(static_cast<int32_t>(j));
      p.sel_count.push_back(1);
    }
    for (size_t e = first; e < p.sel_key.size(); ++e) at[static_cast<size_t>(p.sel_key[e])] = -1;
    p.sel_row_ptr.push_back(static_cast<int64_t>(p.sel_key.size()));
  }
}

}  // namespace

PackedPattern pack_pattern(const Pattern& pattern) {
  const PatternSizes& s = pattern.sizes;
  require(s.seq_len_q <= INT32_MAX, "seq_len_q", s.seq_len_q,
          "the CUDA kernels index rows with int32: at most 2^31-1");
  require(s.seq_len_k <= INT32_MAX, "seq_len_k", s.seq_len_k,
          "the CUDA kernels index keys with int32: at most 2^31-1");
  PackedPattern p;
  p.num_heads = s.num_heads;
  p.seq_len_q = s.seq_len_q;
  p.seq_len_k = s.seq_len_k;

  // One copy per distinct layout; heads sharing a layout share its offsets.
  std::map<const HeadLayout*, int64_t> first_head;
  for (int64_t h = 0; h < s.num_heads; ++h) {
    const HeadLayout& layout = pattern.head(h);
    const auto seen = first_head.find(&layout);
    if (seen != first_head.end()) {
      const auto g = static_cast<size_t>(seen->second);
      p.head_row_ptr_offset.push_back(p.head_row_ptr_offset[g]);
      p.head_col_offset.push_back(p.head_col_offset[g]);
      p.head_bits_offset.push_back(p.head_bits_offset[g]);
      p.head_tile.push_back(p.head_tile[g]);
      continue;
    }
    first_head[&layout] = h;
    p.head_row_ptr_offset.push_back(static_cast<int64_t>(p.row_ptr.size()));
    p.head_col_offset.push_back(static_cast<int64_t>(p.col.size()));
    p.head_bits_offset.push_back(static_cast<int64_t>(p.bits.size()));
    p.head_tile.push_back(layout.tile);
    p.row_ptr.insert(p.row_ptr.end(), layout.row_ptr.begin(), layout.row_ptr.end());
    p.col.insert(p.col.end(), layout.col.begin(), layout.col.end());
    p.bits_at.insert(p.bits_at.end(), layout.bits_at.begin(), layout.bits_at.end());
    p.bits.insert(p.bits.end(), layout.bits.begin(), layout.bits.end());
  }

  if (pattern.has_key_padding()) {
    const Tensor<uint8_t>& mask = *pattern.spec.key_padding_mask;
    p.key_valid.assign(mask.data.begin(), mask.data.end());
  }

  const PatternKind kind = pattern.spec.kind;
  if (kind == PatternKind::window || kind == PatternKind::longformer ||
      kind == PatternKind::random) {
    p.has_band = true;
    p.band = pattern.band();
  }
  p.causal = pattern.spec.causal;
  if (kind == PatternKind::selected) pack_selection(pattern, p);
  plan_schedule(p, split_cap());
  return p;
}

namespace {
int64_t g_split_cap = 0;
}  // namespace

int64_t split_cap() { return g_split_cap; }
void set_split_cap(int64_t cap) {
  require(cap >= 0, "split_cap", cap, "0 (automatic) or a number of key tiles >= 1");
  g_split_cap = cap;
}

void plan_schedule(PackedPattern& packed, int64_t cap) {
  struct Row {
    int64_t head, tile, count, tile_side;
  };
  std::vector<Row> rows;
  packed.max_tile = 1;
  for (int64_t h = 0; h < packed.num_heads; ++h) {
    const auto hh = static_cast<size_t>(h);
    const int64_t side = packed.head_tile[hh];
    packed.max_tile = std::max(packed.max_tile, side);
    const int64_t q_tiles = (packed.seq_len_q + side - 1) / side;
    const int64_t* row_ptr = packed.row_ptr.data() + packed.head_row_ptr_offset[hh];
    for (int64_t qt = 0; qt < q_tiles; ++qt) rows.push_back(Row{h, qt, row_ptr[qt + 1] - row_ptr[qt], side});
  }
  const auto parts_of = [](int64_t count, int64_t c) {
    return std::min(kMaxParts, std::max<int64_t>(1, (count + c - 1) / c));
  };
  const auto slots_needed = [&](int64_t c) {
    int64_t slots = 0;
    for (const Row& r : rows)
      if (parts_of(r.count, c) > 1) slots += parts_of(r.count, c);
    return slots;
  };
  if (cap <= 0) {
    std::vector<int64_t> counts;
    for (const Row& r : rows) counts.push_back(r.count);
    int64_t median = 0;
    if (!counts.empty()) {
      std::nth_element(counts.begin(), counts.begin() + counts.size() / 2, counts.end());
      median = counts[counts.size() / 2];
    }
    cap = std::max(kMinSplitTiles, 4 * median);
    while (slots_needed(cap) * packed.max_tile > kMaxSplitRows) cap *= 2;
  }
  struct Entry {
    int64_t work;  // keys one row of the part visits
    ScheduleEntry e;
  };
  std::vector<Entry> entries;
  packed.split_groups.clear();
  packed.num_slots = 0;
  for (const Row& r : rows) {
    const int64_t parts = parts_of(r.count, cap);
    int64_t slot = -1;
    if (parts > 1) {
      slot = packed.num_slots;
      SplitGroup g;
      g.head = static_cast<int32_t>(r.head);
      g.tile = static_cast<int32_t>(r.tile);
      g.parts = static_cast<int32_t>(parts);
      g.slot = slot;
      packed.split_groups.push_back(g);
      packed.num_slots += parts;
    }
    for (int64_t part = 0; part < parts; ++part) {
      const EntryRange range = split_range(0, r.count, part, parts);
      ScheduleEntry e;
      e.head = static_cast<int32_t>(r.head);
      e.tile = static_cast<int32_t>(r.tile);
      e.part = static_cast<int32_t>(part);
      e.parts = static_cast<int32_t>(parts);
      e.slot = parts > 1 ? slot + part : -1;
      entries.push_back(Entry{(range.end - range.begin) * r.tile_side, e});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.work > b.work; });
  packed.schedule.clear();
  packed.schedule.reserve(entries.size());
  for (const Entry& e : entries) packed.schedule.push_back(e.e);
}

HeadView head_view(const PackedPattern& packed, int64_t h, const int64_t* row_ptr,
                   const int32_t* col, const int64_t* bits_at, const uint64_t* bits) {
  const auto i = static_cast<size_t>(h);
  HeadView v;
  v.row_ptr = row_ptr + packed.head_row_ptr_offset[i];
  v.col = col + packed.head_col_offset[i];
  v.bits_at = bits_at + packed.head_col_offset[i];
  v.bits = bits == nullptr ? nullptr : bits + packed.head_bits_offset[i];
  v.tile = packed.head_tile[i];
  v.words_per_row = (v.tile + 63) / 64;
  v.seq_len_q = packed.seq_len_q;
  v.seq_len_k = packed.seq_len_k;
  return v;
}

bool all_tiles_full(const Pattern& pattern) {
  for (int64_t h = 0; h < pattern.sizes.num_heads; ++h)
    for (int64_t at : pattern.head(h).bits_at)
      if (at != HeadLayout::kFullTile) return false;
  return true;
}

}  // namespace cuda
}  // namespace sparseattn
