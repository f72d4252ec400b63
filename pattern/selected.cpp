// materialize() for selected and selected-blocks (contract §3.16–§3.17): the keys of
// query i are the entries of its row of the index table (or the keys of the listed key
// blocks), -1 skipped, j <= p under causal; LayoutBuilder stores each key once (set
// semantics), and counts_repeats records whether duplicates = count changes anything.
#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/field.h"
#include "pattern/selected_build.h"

namespace sparseattn {

namespace detail {
namespace {

bool is_selected(PatternKind k) {
  return k == PatternKind::selected || k == PatternKind::selected_blocks;
}

const Tensor<int64_t>* table_of(const PatternSpec& s) {
  if (s.kind == PatternKind::selected) return s.kv_indices ? &*s.kv_indices : nullptr;
  return s.block_indices ? &*s.block_indices : nullptr;
}

Field table_field(const PatternSpec& s) {
  return s.kind == PatternKind::selected ? Field::kv_indices : Field::block_indices;
}

// "[b,h,i,k]" of flat offset `at` in a [B, H, R, K] table.
std::string index_text(const Shape& shape, int64_t at) {
  int64_t idx[4];
  for (int d = 3; d >= 0; --d) {
    idx[d] = at % shape[d];
    at /= shape[d];
  }
  return "[" + std::to_string(idx[0]) + "," + std::to_string(idx[1]) + "," +
         std::to_string(idx[2]) + "," + std::to_string(idx[3]) + "]";
}

int64_t query_rows(const PatternSpec& s, const PatternSizes& z) {
  return s.kind == PatternKind::selected ? z.seq_len_q
                                         : (z.seq_len_q + *s.block_size_q - 1) / *s.block_size_q;
}

}  // namespace

void validate_selected_spec(const PatternSpec& s) {
  const PatternKind k = s.kind;
  auto refuse_unless = [&](bool is_set, Field f, const std::string& value, PatternKind reader) {
    if (is_set && k != reader)
      throw FieldError(f, "", value,
                       std::string("not used by pattern ") + pattern_kind_name(k) +
                           "; it applies to pattern " + pattern_kind_name(reader));
  };
  refuse_unless(s.kv_indices.has_value(), Field::kv_indices, "[...]", PatternKind::selected);
  refuse_unless(s.duplicates != Duplicates::once, Field::duplicates, duplicates_name(s.duplicates),
                PatternKind::selected);
  refuse_unless(s.block_indices.has_value(), Field::block_indices, "[...]",
                PatternKind::selected_blocks);
  refuse_unless(s.block_size_q.has_value(), Field::block_size_q,
                s.block_size_q ? std::to_string(*s.block_size_q) : "", PatternKind::selected_blocks);
  refuse_unless(s.block_size_k.has_value(), Field::block_size_k,
                s.block_size_k ? std::to_string(*s.block_size_k) : "", PatternKind::selected_blocks);
  if (!is_selected(k)) return;
  if (k == PatternKind::selected_blocks) {
    require_field(s.block_size_q.has_value(), Field::block_size_q, "", "none",
                  "the selected-blocks pattern needs block_size_q, an integer >= 1 (tokens)");
    require_field(s.block_size_k.has_value(), Field::block_size_k, "", "none",
                  "the selected-blocks pattern needs block_size_k, an integer >= 1 (tokens)");
    require_field(*s.block_size_q >= 1, Field::block_size_q, "", *s.block_size_q,
                  "must be an integer >= 1 (tokens per query block)");
    require_field(*s.block_size_k >= 1, Field::block_size_k, "", *s.block_size_k,
                  "must be an integer >= 1 (tokens per key block)");
  }
  const Field f = table_field(s);
  const Tensor<int64_t>* t = table_of(s);
  const char* what = k == PatternKind::selected
                         ? "[B_sel, H_sel, seq_len_q, K] key indices"
                         : "[B_sel, H_sel, ceil(seq_len_q / block_size_q), K] key-block indices";
  require_field(t != nullptr, f, "", "none",
                std::string("the ") + pattern_kind_name(k) + " pattern needs its table, " + what);
  require_field(t->rank() == 4, f, " shape", shape_text(t->shape),
                std::string("must have rank 4: ") + what);
  require_field(t->dim(3) >= 1, f, " shape", shape_text(t->shape),
                "must have K >= 1 slots per row (the last axis)");
  for (size_t a = 0; a < t->data.size(); ++a)
    require_field(t->data[a] >= -1, f, index_text(t->shape, static_cast<int64_t>(a)), t->data[a],
                  k == PatternKind::selected ? "must be -1 (empty slot) or a key index >= 0"
                                             : "must be -1 (empty slot) or a key block >= 0");
}

void validate_selected_sizes(const PatternSpec& s, const PatternSizes& z) {
  const Field f = table_field(s);
  const Tensor<int64_t>& t = *table_of(s);
  const int64_t rows = query_rows(s, z);
  const int64_t hs = t.dim(1);
  const bool batch_ok = t.dim(0) == 1 || t.dim(0) == z.batch;
  const bool heads_ok = hs == 1 || hs == z.num_heads || (hs >= 1 && z.num_heads % hs == 0);
  require_field(batch_ok && heads_ok && t.dim(2) == rows, f, " shape", shape_text(t.shape),
                "must be [B_sel (1 or batch = " + std::to_string(z.batch) +
                    "), H_sel (1, H_kv or num_heads = " + std::to_string(z.num_heads) + "), " +
                    (s.kind == PatternKind::selected ? "seq_len_q" : "ceil(seq_len_q / block_size_q)") +
                    " (" + std::to_string(rows) + "), K >= 1]");
  const int64_t limit = s.kind == PatternKind::selected
                            ? z.seq_len_k
                            : (z.seq_len_k + *s.block_size_k - 1) / *s.block_size_k;
  for (size_t a = 0; a < t.data.size(); ++a)
    require_field(t.data[a] < limit, f, index_text(t.shape, static_cast<int64_t>(a)), t.data[a],
                  s.kind == PatternKind::selected
                      ? "must be -1 (empty slot) or a key in [0, seq_len_k) = [0, " +
                            std::to_string(limit) + ")"
                      : "must be -1 (empty slot) or a key block in [0, ceil(seq_len_k / "
                        "block_size_k)) = [0, " + std::to_string(limit) + ")");
}

void build_selected(const PatternSpec& s, const PatternSizes& z, Pattern& p) {
  const Tensor<int64_t>& t = *table_of(s);
  p.selection = t;
  const int64_t bsel = t.dim(0), hsel = t.dim(1), rows = t.dim(2), kk = t.dim(3);
  const int64_t lq = z.seq_len_q, lk = z.seq_len_k, offset = lk - lq;
  const bool blocks = s.kind == PatternKind::selected_blocks;
  const int64_t bq = blocks ? *s.block_size_q : 1, bk = blocks ? *s.block_size_k : 1;
  // Blocks of one size are the layout's tiles (contract §3.17); else the storage tile.
  const int64_t tile = blocks && bq == bk ? std::min(bq, std::max<int64_t>(std::max(lq, lk), 1))
                                          : s.tile;
  std::vector<int64_t> counted;  // scratch: the keys of one row (duplicates = count)
  auto build = [&](int64_t b, int64_t r) {
    const int64_t* row0 = t.ptr() + (b * hsel + r) * rows * kk;
    LayoutBuilder lb(lq, lk, tile);
    for (int64_t qt = 0; qt * tile < lq; ++qt) {
      lb.begin_query_tile(qt);
      for (int64_t i = qt * tile; i < std::min(lq, (qt + 1) * tile); ++i) {
        const int64_t p_i = i + offset;  // contract §3.1
        const int64_t hi = s.causal ? std::min(p_i + 1, lk) : lk;  // keys [0, hi)
        const int64_t* row = row0 + (blocks ? i / bq : i) * kk;
        counted.clear();
        for (int64_t c = 0; c < kk; ++c) {
          const int64_t e = row[c];
          if (e < 0) continue;
          if (!blocks) {
            if (e < hi) {
              lb.add_key(i, e);
              counted.push_back(e);
            }
          } else {
            lb.add_key_range(i, e * bk, std::min((e + 1) * bk, hi));
          }
        }
        if (s.duplicates == Duplicates::count && !p.counts_repeats) {
          std::sort(counted.begin(), counted.end());
          p.counts_repeats = std::adjacent_find(counted.begin(), counted.end()) != counted.end();
        }
      }
    }
    return std::make_shared<const HeadLayout>(lb.finish());
  };
  const int64_t g = z.num_heads / hsel;  // query heads per list (contract §2.7's group)
  std::vector<std::shared_ptr<const HeadLayout>> all(static_cast<size_t>(bsel * z.num_heads));
  for (int64_t b = 0; b < bsel; ++b) {
    std::map<int64_t, std::shared_ptr<const HeadLayout>> of_row;  // heads sharing a list share it
    for (int64_t h = 0; h < z.num_heads; ++h) {
      const int64_t r = hsel == 1 ? 0 : h / g;
      auto& layout = of_row[r];
      if (!layout) layout = build(b, r);
      all[static_cast<size_t>(b * z.num_heads + h)] = layout;
    }
  }
  p.heads.assign(all.begin(), all.begin() + z.num_heads);
  if (bsel > 1) p.batch_heads = std::move(all);
}

}  // namespace detail

int64_t Pattern::selection_row(int64_t h) const {
  const int64_t hsel = selection.dim(1);
  return hsel == 1 ? 0 : h / (sizes.num_heads / hsel);
}

int64_t Pattern::multiplicity(int64_t b, int64_t h, int64_t i, int64_t j) const {
  if (!allowed(b, h, i, j)) return 0;
  if (!counts_repeats) return 1;
  // selected with duplicates = count (selected-blocks has no count mode, §3.17).
  const int64_t bsel = selection.dim(0) == 1 ? 0 : b;
  const int64_t kk = selection.dim(3);
  const int64_t* row =
      selection.ptr() + ((bsel * selection.dim(1) + selection_row(h)) * selection.dim(2) + i) * kk;
  return std::count(row, row + kk, j);
}

}  // namespace sparseattn
