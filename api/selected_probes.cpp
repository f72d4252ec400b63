// The selected-attention probes (api/selected_probes.h): each mistake is what a kernel
// that reads the index table wrongly computes — a per-kv-head table read with the query
// head's index (the indices analogue of §2.7's h mod H_kv), -1 taken as an index (key 0,
// or the last key as Python's negative indexing reads it), a repeat counted or not, a
// block size one off.
#include "api/selected_probes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace sparseattn::api {

namespace {

PatternSpec with_table(const Pattern& p, Tensor<int64_t> t) {
  PatternSpec s = p.spec;
  if (s.kind == PatternKind::selected) s.kv_indices = std::move(t);
  else s.block_indices = std::move(t);
  return s;
}

// The table with `heads` rows per batch element, row h copied from row `from(h)`.
template <class From>
Tensor<int64_t> rows_from(const Tensor<int64_t>& t, int64_t heads, From from) {
  const int64_t B = t.dim(0), R = t.dim(2) * t.dim(3);
  Tensor<int64_t> out({B, heads, t.dim(2), t.dim(3)});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(t.ptr() + (b * t.dim(1) + from(h)) * R, R, out.ptr() + (b * heads + h) * R);
  return out;
}

}  // namespace

std::vector<SelectedMistake> selected_mistakes(const Pattern& p, int64_t num_kv_heads) {
  std::vector<SelectedMistake> out;
  const PatternKind kind = p.spec.kind;
  if (kind != PatternKind::selected && kind != PatternKind::selected_blocks) return out;
  const bool blocks = kind == PatternKind::selected_blocks;
  const char* table = blocks ? "block_indices" : "kv_indices";
  const Tensor<int64_t>& t = p.selection;
  const int64_t H = p.sizes.num_heads, hsel = t.dim(1);
  const int64_t g = num_kv_heads >= 1 ? H / num_kv_heads : 1;
  if (hsel > 1 && hsel < H)
    out.push_back({std::string(table) + " read per query head",
                   std::string(table) + " read per query head: query head h took row h mod " +
                       std::to_string(hsel) + " of the per-kv-head table instead of row h / " +
                       std::to_string(H / hsel) + " (contract §3.16, §2.7)",
                   with_table(p, rows_from(t, H, [hsel](int64_t h) { return h % hsel; }))});
  if (hsel == H && g > 1)
    out.push_back({std::string(table) + " read per kv head",
                   std::string(table) + " read per kv head: query head h took row h / " +
                       std::to_string(g) + " of the per-query-head table instead of its own row h "
                       "(contract §3.16)",
                   with_table(p, rows_from(t, H, [g](int64_t h) { return h / g; }))});
  if (std::find(t.data.begin(), t.data.end(), -1) != t.data.end()) {
    const int64_t last = blocks ? (p.sizes.seq_len_k + *p.spec.block_size_k - 1) / *p.spec.block_size_k - 1
                                : p.sizes.seq_len_k - 1;
    const char* unit = blocks ? "block" : "key";
    for (const bool as_last : {false, true}) {
      Tensor<int64_t> alt = t;
      for (int64_t& e : alt.data)
        if (e == -1) e = as_last ? last : 0;
      out.push_back({std::string("-1 read as ") + (as_last ? "the last " : "") + unit + (as_last ? "" : " 0"),
                     std::string("-1 (an empty slot) read as ") +
                         (as_last ? std::string("the last ") + unit + " " + std::to_string(last) +
                                        " (a negative index counted from the end)"
                                  : std::string(unit) + " 0") +
                         " (contract §3.16: -1 selects nothing)",
                     with_table(p, alt)});
      // A gather kernel reads slot by slot: each -1 taken as key 0 enters once more, so a
      // row that lists key 0 and has an empty slot weighs key 0 twice. Only under
      // --duplicates once does this differ from the table above.
      if (!as_last && !blocks && p.spec.duplicates == Duplicates::once) {
        PatternSpec counted = with_table(p, alt);
        counted.duplicates = Duplicates::count;
        out.push_back({"-1 read as key 0, once per empty slot",
                       "-1 (an empty slot) read as key 0, each empty slot counting key 0 once "
                       "more (contract §3.16: -1 selects nothing)",
                       std::move(counted), true});
      }
    }
  }
  if (blocks)
    for (const bool q_side : {false, true})
      for (const int delta : {-1, 1}) {
        PatternSpec s = p.spec;
        std::optional<int64_t>& size = q_side ? s.block_size_q : s.block_size_k;
        *size += delta;
        if (*size < 1) continue;
        const std::string flag = q_side ? "block_size_q" : "block_size_k";
        out.push_back({flag + " one " + (delta < 0 ? "smaller" : "larger"),
                       "block size off by one: " + flag + " read as " + std::to_string(*size) +
                           " instead of " + std::to_string(*size - delta) + " (contract §3.17)",
                       s});
      }
  return out;
}

bool has_repeats(const Pattern& p) {
  if (p.spec.kind != PatternKind::selected) return false;
  if (p.spec.duplicates == Duplicates::count) return p.counts_repeats;
  PatternSpec s = p.spec;
  s.duplicates = Duplicates::count;
  return materialize(s, p.sizes).counts_repeats;
}

int64_t selected_row(const Pattern& p, int64_t b, int64_t h, int64_t i, bool count,
                     const double* q, const double* k, const double* v, int64_t D, int64_t Dv,
                     double scale, double* o, double* lse) {
  std::fill(o, o + Dv, 0.0);
  *lse = -std::numeric_limits<double>::infinity();
  if (!p.query_valid(b, i)) return 0;
  const Tensor<int64_t>& t = p.selection;
  const int64_t kk = t.dim(3), lk = p.sizes.seq_len_k, pos = i + lk - p.sizes.seq_len_q;
  const int64_t* row = t.ptr() + (((t.dim(0) == 1 ? 0 : b) * t.dim(1) + p.selection_row(h)) * t.dim(2) + i) * kk;
  std::map<int64_t, double> weight;  // ascending keys, as a1 sums them
  for (int64_t c = 0; c < kk; ++c) {
    const int64_t j = row[c];
    if (j < 0 || (p.spec.causal && j > pos) || !p.key_valid(b, j)) continue;
    double& w = weight[j];
    w = count ? w + 1.0 : 1.0;
  }
  if (weight.empty()) return 0;
  std::vector<double> s;
  double m = -std::numeric_limits<double>::infinity();
  for (const auto& [j, w] : weight) {
    double dot = 0.0;
    for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
    s.push_back(scale * dot);
    m = std::max(m, s.back());
  }
  double l = 0.0;
  size_t at = 0;
  for (const auto& [j, w] : weight) l += w * std::exp(s[at++] - m);
  *lse = m + std::log(l);
  at = 0;
  for (const auto& [j, w] : weight) {
    const double pj = w * std::exp(s[at++] - *lse);
    for (int64_t d = 0; d < Dv; ++d) o[d] += pj * v[j * Dv + d];
  }
  return static_cast<int64_t>(weight.size()) * (D + Dv);
}

}  // namespace sparseattn::api
