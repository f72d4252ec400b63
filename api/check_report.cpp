#include "api/check_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

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

std::string fmt(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
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

void locate_failures(nlohmann::json& j, const Tensor<double>& cand, const Tensor<double>& ref,
                     Tolerance tol, const Pattern& pattern, const std::vector<uint8_t>& skip) {
  const RowShape r = row_shape(ref);
  nlohmann::json mism = nlohmann::json::object(), rows = nlohmann::json::object();
  int64_t worst_row = -1, nonfinite_row = -1, heads_listed = 0, heads_failing = 0;
  double worst_budget = -1.0;
  nlohmann::json first_nonfinite;
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t h = 0; h < r.heads; ++h) {
      int64_t count = 0;
      std::vector<int64_t> failing;
      for (int64_t i = 0; i < r.rows; ++i) {
        if (skipped(skip, r, b, i)) continue;
        const int64_t row = (b * r.heads + h) * r.rows + i;
        bool bad = false;
        for (int64_t d = 0; d < r.width; ++d) {
          const double x = cand.data[row * r.width + d], y = ref.data[row * r.width + d];
          if (element_ok(x, y, tol)) continue;
          bad = true;
          ++count;
          const double budget = std::isfinite(x) && std::isfinite(y)
                                    ? std::fabs(x - y) / (tol.atol + tol.rtol * std::fabs(y))
                                    : INFINITY;
          if (budget > worst_budget) worst_budget = budget, worst_row = row;
          if (nonfinite_row < 0 && std::isfinite(y)) {
            nonfinite_row = row;
            nlohmann::json idx = {b, h, i};
            if (r.width > 1 || ref.shape.size() == 4) idx.push_back(d);
            first_nonfinite = {{"index", idx}, {"candidate", number_json(x)},
                               {"expected", number_json(y)}};
          }
        }
        if (bad) failing.push_back(i);
      }
      if (count == 0) continue;
      ++heads_failing;
      const std::string key = std::to_string(b) + "," + std::to_string(h);
      mism[key] = count;
      if (heads_listed < 32) {
        rows[key] = ranges_text(failing);
        ++heads_listed;
      }
      (void)nonfinite_row;
    }
  // nonfinite_row above tracks a candidate NaN/Inf only when it is non-finite itself:
  // recompute precisely (first element where the oracle is finite and the candidate not).
  nonfinite_row = -1;
  first_nonfinite = nullptr;
  for (int64_t e = 0; e < ref.numel() && nonfinite_row < 0; ++e) {
    const int64_t row = e / r.width, i = row % r.rows, b = row / (r.rows * r.heads);
    if (skipped(skip, r, b, i)) continue;
    if (std::isfinite(ref.data[e]) && !std::isfinite(cand.data[e])) {
      nonfinite_row = row;
      nlohmann::json idx = {b, (row / r.rows) % r.heads, i};
      if (ref.shape.size() == 4) idx.push_back(e % r.width);
      first_nonfinite = {{"index", idx}, {"candidate", number_json(cand.data[e])},
                         {"expected", number_json(ref.data[e])}};
    }
  }
  j["mismatches"] = mism;
  j["rows"] = rows;
  if (heads_failing > heads_listed)
    j["rows_truncated"] = std::to_string(heads_failing - heads_listed) + " more (batch, head) pairs fail";
  if (!first_nonfinite.is_null()) j["first_nonfinite"] = first_nonfinite;
  // The row shown in full: the first non-finite one when there is one, else the worst.
  const int64_t show = nonfinite_row >= 0 ? nonfinite_row : worst_row;
  if (show >= 0) {
    const int64_t i = show % r.rows, h = (show / r.rows) % r.heads, b = show / (r.rows * r.heads);
    nlohmann::json e = nlohmann::json::array(), c = nlohmann::json::array();
    for (int64_t d = 0; d < std::min<int64_t>(r.width, 8); ++d) {
      e.push_back(number_json(ref.data[show * r.width + d]));
      c.push_back(number_json(cand.data[show * r.width + d]));
    }
    std::vector<int64_t> keys;
    const PatternSizes& z = pattern.sizes;
    if (b < z.batch && h < z.num_heads && i < z.seq_len_q)
      for (int64_t k = 0; k < z.seq_len_k; ++k)
        if (pattern.allowed(b, h, i, k)) keys.push_back(k);
    j["worst_row"] = {{"batch", b},
                      {"head", h},
                      {"row", i},
                      {"expected", e},
                      {"candidate", c},
                      {"allowed_keys", ranges_text(keys)},
                      {"num_allowed_keys", keys.size()},
                      {"fully_masked", keys.empty()},
                      {"padded_query", b < z.batch && i < z.seq_len_q && !pattern.query_valid(b, i)}};
  }
  const double over = worst_budget < 0 ? 0.0 : worst_budget;
  j["error_over_tolerance"] = number_json(over);
  j["error_over_tolerance_means"] =
      "the worst element's |candidate - oracle| divided by its allowed error atol + rtol*|oracle|; "
      "<= 1 passes, 2 is twice the allowed error, inf a non-finite value where a finite one "
      "(or a different infinity) was expected";
}

void locate_gradient_failures(nlohmann::json& j, const Tensor<double>& cand,
                              const Tensor<double>& ref, Tolerance tol, const char* rows_are) {
  const RowShape r = row_shape(ref);
  nlohmann::json mism = nlohmann::json::object(), rows = nlohmann::json::object();
  int64_t heads_listed = 0, heads_failing = 0;
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t h = 0; h < r.heads; ++h) {
      int64_t count = 0;
      std::vector<int64_t> failing;
      for (int64_t i = 0; i < r.rows; ++i) {
        const int64_t row = (b * r.heads + h) * r.rows + i;
        int64_t bad = 0;
        for (int64_t d = 0; d < r.width; ++d)
          bad += !element_ok(cand.data[row * r.width + d], ref.data[row * r.width + d], tol);
        if (bad > 0) failing.push_back(i);
        count += bad;
      }
      if (count == 0) continue;
      ++heads_failing;
      const std::string key = std::to_string(b) + "," + std::to_string(h);
      mism[key] = count;
      if (heads_listed < 32) rows[key] = ranges_text(failing), ++heads_listed;
    }
  j["mismatches"] = mism;
  j["rows"] = rows;
  j["rows_are"] = rows_are;
  if (heads_failing > heads_listed)
    j["rows_truncated"] = std::to_string(heads_failing - heads_listed) + " more (batch, head) pairs fail";
}

bool matches(const Tensor<double>& cand, const Tensor<double>& ref, Tolerance tol,
             const std::vector<uint8_t>& skip, const std::vector<uint8_t>* only_rows) {
  if (cand.numel() != ref.numel()) return false;
  const RowShape r = row_shape(ref);
  for (int64_t e = 0; e < ref.numel(); ++e) {
    const int64_t row = e / r.width, i = row % r.rows, b = row / (r.rows * r.heads);
    if (skipped(skip, r, b, i)) continue;
    if (only_rows && !(*only_rows)[static_cast<size_t>(row)]) continue;
    if (!element_ok(cand.data[e], ref.data[e], tol)) return false;
  }
  return true;
}

std::string check_summary_text(const nlohmann::json& j) {
  auto list = [](const nlohmann::json& xs) {
    std::string t = "[";
    for (const nlohmann::json& x : xs) {
      if (t.size() > 1) t += ", ";
      t += x.is_number() ? fmt(x.get<double>()) : x.get<std::string>();
    }
    return t + "]";
  };
  std::string t = std::string("check: ") + (j.value("pass", false) ? "PASS" : "FAIL") + " (" +
                  j.value("pattern", "") + ", oracle " + j.value("oracle", "") + ")\n";
  for (const char* name : {"o", "lse", "dq", "dk", "dv", "dq_global", "dk_global", "dv_global"}) {
    if (!j.contains(name)) continue;
    const nlohmann::json& r = j[name];
    t += std::string("  ") + name + ": " + (r.value("pass", false) ? "pass" : "FAIL");
    if (r.contains("error_over_tolerance")) {
      const nlohmann::json& e = r["error_over_tolerance"];
      t += ", error/tolerance " + (e.is_number() ? fmt(e.get<double>()) : e.get<std::string>());
    }
    if (!r.value("reason", std::string()).empty()) t += " — " + r["reason"].get<std::string>();
    t += "\n";
    if (r.contains("rows"))
      for (auto it = r["rows"].begin(); it != r["rows"].end(); ++it)
        t += "    (batch,head) " + it.key() + ": " +
             (r.contains("rows_are") ? r["rows_are"].get<std::string>() + " rows " : "rows ") +
             it.value().get<std::string>() + "\n";
    if (r.contains("worst_row") && !r.value("pass", false)) {
      const nlohmann::json& w = r["worst_row"];
      t += "    worst row b=" + std::to_string(w["batch"].get<int64_t>()) +
           " h=" + std::to_string(w["head"].get<int64_t>()) +
           " i=" + std::to_string(w["row"].get<int64_t>()) + ": expected " + list(w["expected"]) +
           ", candidate " + list(w["candidate"]) + "; allowed keys " +
           w["allowed_keys"].get<std::string>() +
           (w["allowed_keys"].get<std::string>().empty() ? "none" : "") +
           (w["fully_masked"].get<bool>() ? " (fully masked)" : "") +
           (w["padded_query"].get<bool>() ? " (padded query)" : "") + "\n";
    }
  }
  if (j.contains("probable_cause")) t += "  probable cause: " + j["probable_cause"].get<std::string>() + "\n";
  if (j.contains("hint")) t += "  convention hint: " + j["hint"].get<std::string>() + "\n";
  return t;
}

}  // namespace sparseattn::api
