#include "api/check_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "core/check.h"
#include "core/error.h"

namespace sparseattn::api {

namespace {

bool element_ok(double x, double ref, Tolerance tol) {
  if (!std::isfinite(ref) || !std::isfinite(x)) return x == ref;  // -inf = -inf matches
  return std::fabs(x - ref) <= tol.atol + tol.rtol * std::fabs(ref);
}

// Rows of a [B, H, Lq, X] or [B, H, Lq] tensor.
struct RowShape {
  int64_t batch, heads, rows, width;
};
RowShape row_shape(const Tensor<double>& ref) {
  const Shape& s = ref.shape;
  if (s.size() == 4) return {s[0], s[1], s[2], s[3]};
  if (s.size() == 3) return {s[0], s[1], s[2], 1};
  return {1, 1, ref.numel(), 1};
}

bool skipped(const std::vector<uint8_t>& skip, const RowShape& r, int64_t b, int64_t i) {
  return !skip.empty() && skip[static_cast<size_t>(b * r.rows + i)] != 0;
}

}  // namespace

nlohmann::json number_json(double x) {
  if (std::isfinite(x)) return x;
  if (std::isnan(x)) return "nan";
  return x > 0 ? "inf" : "-inf";
}

std::string ranges_text(const std::vector<int64_t>& v, size_t max_ranges) {
  std::string s;
  size_t n = 0, shown = 0;
  for (size_t a = 0; a < v.size();) {
    size_t b = a;
    while (b + 1 < v.size() && v[b + 1] == v[b] + 1) ++b;
    if (shown < max_ranges) {
      if (!s.empty()) s += ",";
      s += std::to_string(v[a]);
      if (b > a) s += "-" + std::to_string(v[b]);
      ++shown;
    }
    ++n;
    a = b + 1;
  }
  if (n > shown) s += ",... (" + std::to_string(n - shown) + " more ranges)";
  return s;
}

namespace {

// Where an element sits: (batch, head, row) of a [B, H, rows, width] tensor.
struct ElementPlace {
  int64_t b, h, i, d;
};
ElementPlace place(const RowShape& r, int64_t e) {
  const int64_t row = e / r.width;
  return {row / (r.rows * r.heads), (row / r.rows) % r.heads, row % r.rows, e % r.width};
}
Shape index_of(const Tensor<double>& ref, const ElementPlace& p) {
  Shape idx = {p.b, p.h, p.i};
  if (ref.shape.size() == 4) idx.push_back(p.d);
  return idx;
}

// The worst row in full: its first 8 values and, from the pattern, the keys a query row may
// attend (or the queries that may attend a key row).
WorstRow worst_row_of(const Tensor<double>& cand, const Tensor<double>& ref, const RowShape& r,
                      int64_t worst, const Pattern& pattern, RowKind rows_are) {
  const ElementPlace p = place(r, worst);
  const int64_t row = worst / r.width;
  WorstRow w;
  w.batch = p.b, w.head = p.h, w.row = p.i;
  for (int64_t d = 0; d < std::min<int64_t>(r.width, 8); ++d) {
    w.expected.push_back(ref.data[row * r.width + d]);
    w.candidate.push_back(cand.data[row * r.width + d]);
  }
  std::vector<int64_t> allowed;
  const PatternSizes& z = pattern.sizes;
  const bool query = rows_are == RowKind::query;
  if (p.b < z.batch && p.h < z.num_heads && p.i < (query ? z.seq_len_q : z.seq_len_k)) {
    const int64_t other = query ? z.seq_len_k : z.seq_len_q;
    for (int64_t x = 0; x < other; ++x)
      if (query ? pattern.allowed(p.b, p.h, p.i, x) : pattern.allowed(p.b, p.h, x, p.i))
        allowed.push_back(x);
    w.padded = query ? !pattern.query_valid(p.b, p.i) : !pattern.key_valid(p.b, p.i);
  }
  w.allowed = ranges_text(allowed);
  w.num_allowed = static_cast<int64_t>(allowed.size());
  w.fully_masked = allowed.empty();
  return w;
}

}  // namespace

TensorReport tensor_report(const std::string& name, const Tensor<double>& cand,
                           const Tensor<double>& ref, Tolerance tol, const Pattern& pattern,
                           const std::vector<uint8_t>& skip, RowKind rows_are) {
  const RowShape r = row_shape(ref);
  // Skipped rows take the oracle's values for core/check.h's checker: never compared.
  Tensor<double> c = cand;
  c.shape = ref.shape;
  int64_t compared = 0, first_compared = -1;
  for (int64_t e = 0; e < ref.numel(); ++e) {
    const ElementPlace p = place(r, e);
    if (skipped(skip, r, p.b, p.i)) {
      c.data[e] = ref.data[e];
    } else {
      if (compared++ == 0) first_compared = e;
    }
  }
  const CheckReport k = check_close(c, ref, tol);
  TensorReport t;
  t.tensor = name;
  t.rows_are = rows_are;
  t.tol = tol;
  t.num_elements = k.num_elements;
  t.num_compared = compared;
  t.num_nonfinite = k.num_nonfinite;
  t.num_mismatched = k.num_mismatched;
  t.max_abs_error = t.max_abs_error_finite = k.max_abs_error;
  t.max_rel_error = t.max_rel_error_finite = k.max_rel_error;
  t.error_over_tolerance = k.budget_used;
  t.reason = k.reason;
  t.pass = k.pass && compared > 0;
  if (compared == 0) {
    t.nothing_compared = true;
    t.reason = "nothing compared: every row of " + name + " is skipped";
    return t;
  }
  // The worst element: the first NaN mismatch, else the checker's (largest budget used). A
  // NaN has no size; max_abs_error says NaN rather than the largest finite error around it.
  // (An exact match everywhere leaves the checker's first element, maybe a skipped one.)
  int64_t worst = k.budget_used > 0.0 ? k.worst_index : first_compared;
  bool nan = false, other_nonfinite = false;
  for (int64_t e = 0; e < ref.numel(); ++e) {
    const double x = c.data[e], y = ref.data[e];
    if (std::isnan(x) && !std::isnan(y)) {
      if (!nan) worst = e;
      nan = true;
    } else if (!element_ok(x, y, tol) && !(std::isfinite(x) && std::isfinite(y))) {
      other_nonfinite = true;
    }
  }
  if (nan) {
    t.max_abs_error = t.max_rel_error = NAN;
    t.error_over_tolerance = INFINITY;
  } else if (other_nonfinite) {
    t.max_abs_error = t.max_rel_error = INFINITY;
  }
  if (worst >= 0) {
    t.worst_index = index_of(ref, place(r, worst));
    t.worst_candidate = c.data[worst];
    t.worst_reference = ref.data[worst];
  }
  // Mismatches and failing rows per (batch, head).
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t h = 0; h < r.heads; ++h) {
      int64_t count = 0;
      std::vector<int64_t> failing;
      for (int64_t i = 0; i < r.rows; ++i) {
        const int64_t row = (b * r.heads + h) * r.rows + i;
        bool bad = false;
        for (int64_t d = 0; d < r.width; ++d) {
          const int64_t e = row * r.width + d;
          if (element_ok(c.data[e], ref.data[e], tol)) continue;
          bad = true;
          ++count;
          if (!t.first_nonfinite && std::isfinite(ref.data[e]) && !std::isfinite(c.data[e]))
            t.first_nonfinite = NonFinite{index_of(ref, place(r, e)), c.data[e], ref.data[e]};
        }
        if (bad) failing.push_back(i);
      }
      if (count == 0) continue;
      const std::string key = std::to_string(b) + "," + std::to_string(h);
      t.mismatches.emplace_back(key, count);
      if (t.rows.size() < 32)
        t.rows.emplace_back(key, ranges_text(failing));
      else
        ++t.rows_truncated;
    }
  // first_nonfinite above is the first in (b, h, row) order, which is element order.
  if (t.num_mismatched > 0 && worst >= 0)
    t.worst_row = worst_row_of(c, ref, r, worst, pattern, rows_are);
  return t;
}

bool matches(const Tensor<double>& cand, const Tensor<double>& ref, Tolerance tol,
             const std::vector<uint8_t>& skip, const std::vector<uint8_t>* only_rows) {
  if (cand.numel() != ref.numel()) return false;
  const RowShape r = row_shape(ref);
  int64_t compared = 0;
  for (int64_t e = 0; e < ref.numel(); ++e) {
    const int64_t row = e / r.width, i = row % r.rows, b = row / (r.rows * r.heads);
    if (skipped(skip, r, b, i)) continue;
    if (only_rows && !(*only_rows)[static_cast<size_t>(row)]) continue;
    if (!element_ok(cand.data[e], ref.data[e], tol)) return false;
    ++compared;
  }
  return compared > 0;  // a comparison of nothing matches nothing
}

}  // namespace sparseattn::api
