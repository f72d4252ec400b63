// The one renderer of check's result; see check_render.h.
#include "api/check_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "api/check_report.h"
#include "api/conventions.h"

namespace sparseattn::api {

namespace {

// printf's %.{digits}g, with non-finite values spelled as in the JSON (never "-nan").
std::string g(double x, int digits) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

// x as Python's repr() writes it: the shortest digits that read back as x, fixed
// notation for exponents -4..15 (always with a decimal point, "0.0"), else "1.5e-07".
// Values a reader may paste back; Python's old report printed them so.
std::string exact(double x) {
  if (!std::isfinite(x)) return g(x, 1);
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  const std::string e = buf;  // [-]d[.ddd]e[+-]XX
  const size_t at = e.find('e');
  const bool negative = e[0] == '-';
  std::string mantissa = e.substr(negative ? 1 : 0, at - (negative ? 1 : 0));
  const int exponent = std::atoi(e.c_str() + at + 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
            digits.substr(static_cast<size_t>(exponent) + 1);
    }
  } else {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ex;
  }
  return (negative ? "-" : "") + out;
}

std::string index_text(const Shape& idx) {
  std::string s = "(";
  for (size_t a = 0; a < idx.size(); ++a) s += (a ? ", " : "") + std::to_string(idx[a]);
  return s + ")";
}

std::string values_text(const std::vector<double>& xs) {
  std::string s = "[";
  for (size_t a = 0; a < xs.size(); ++a) s += (a ? ", " : "") + g(xs[a], 6);
  return s + "]";
}

nlohmann::json index_json(const Shape& idx) {
  nlohmann::json j = nlohmann::json::array();
  for (int64_t x : idx) j.push_back(x);
  return j;
}

const char* row_word(RowKind k) {
  return k == RowKind::query ? "query" : k == RowKind::key ? "key" : "head";
}

nlohmann::json reference_error_json(const ReferenceErrorVerdict& v) {
  return {{"rule", "reference-error"},
          {"naive_dtype", low_dtype_name(v.naive_dtype)},
          {"factor", v.factor},
          {"floor", v.floor},
          {"candidate", {{"max_abs_error", number_json(v.candidate_max)},
                         {"mean_abs_error", number_json(v.candidate_mean)}}},
          {"naive", {{"max_abs_error", number_json(v.naive_max)},
                     {"mean_abs_error", number_json(v.naive_mean)}}},
          {"means", "pass when the candidate's max and mean |error| against the float64 oracle "
                    "are at most factor x those of a naive implementation in naive_dtype, plus floor"},
          {"pass", v.pass}};
}

// What a failing tensor's numbers alone suggest, when no probe named a cause.
std::string reading_hint(const TensorReport& t) {
  const bool gradient = t.tensor.rfind("d", 0) == 0;  // dq, dk, dv and the projections' ones
  if (t.nothing_compared)
    return "every row of " + t.tensor + " is skipped: drop --padded-queries any (padded_queries=\"any\") "
           "or give rows that are not padding (a query sits at key position i + seq_len_k - "
           "seq_len_q, contract §2)";
  if (t.num_nonfinite) {
    if (gradient)
      return "the candidate gradient has NaN/Inf where the oracle is finite; a fully masked row's "
             "dq and a padded key's dk, dv must be exactly 0, never NaN (docs/contract.md §7.2)";
    const std::optional<WorstRow>& w = t.worst_row;
    if (w && t.rows_are == RowKind::query && !w->fully_masked && w->num_allowed > 0)
      return "the candidate has NaN/Inf where the oracle is finite, on query row " +
             std::to_string(w->row) + ", which has " + std::to_string(w->num_allowed) +
             " allowed keys (it is not masked): most likely exp overflowed (inf / inf) or "
             "underflowed everywhere (0 / 0); subtract the row maximum over the allowed keys "
             "before exponentiating (docs/contract.md §2.1)";
    return "the candidate has NaN/Inf where the oracle is finite; a row with no allowed key must "
           "give o = 0 and lse = -inf, never NaN (docs/contract.md §2)";
  }
  if (t.worst_row && t.worst_row->padded && t.rows_are == RowKind::query)
    return "the worst row is a padded query: query i sits at key position i + seq_len_k - "
           "seq_len_q (contract §2), which the key padding mask marks as padding, so its o is 0 "
           "and its lse -inf; a decode step on a partly filled cache needs its own position kept "
           "in the mask (or seq_len_k = the filled length)";
  if (t.num_mismatched >= 0.9 * static_cast<double>(t.num_compared)) {
    if (gradient)
      return "almost every element differs: compare dout (the gradient of o, o's shape), the "
             "scale (dq and dk carry its factor, dv does not), the softmax Jacobian term "
             "rowsum(dout * o) (docs/backward.md) and the pattern's parameters";
    return "almost every element differs: compare the pattern's parameters (window is one-sided: "
           "HF Longformer's attention_window = 2 * window), the scale (default 1/sqrt(head_dim)), "
           "the layout [batch, num_heads, seq_len, head_dim] and, for lse, the natural log";
  }
  if (gradient)
    return "some elements differ: compare pattern.mask(...) with the pairs the backward pass used "
           "near the worst row (masked pairs must add nothing; dk, dv sum over the queries that "
           "attend the key)";
  return "some elements differ: compare pattern.mask(...) with the keys the candidate used near "
         "the worst row (boundaries, global tokens, random blocks, padding)";
}

}  // namespace

nlohmann::json tensor_json(const TensorReport& t) {
  nlohmann::json j = {
      {"tensor", t.tensor},
      {"pass", t.pass},
      {"reason", t.reason},
      {"num_elements", t.num_elements},
      {"num_compared", t.num_compared},
      {"nothing_compared", t.nothing_compared},
      {"num_nonfinite", t.num_nonfinite},
      {"num_mismatched", t.num_mismatched},
      {"max_abs_error", number_json(t.max_abs_error)},
      {"max_rel_error", number_json(t.max_rel_error)},
      {"max_abs_error_finite", t.max_abs_error_finite},
      {"max_rel_error_finite", t.max_rel_error_finite},
      {"worst_index", index_json(t.worst_index)},
      {"worst_candidate", number_json(t.worst_candidate)},
      {"worst_reference", number_json(t.worst_reference)},
      {"budget_used", number_json(t.error_over_tolerance)},
      {"error_over_tolerance", number_json(t.error_over_tolerance)},
      {"error_over_tolerance_means",
       "the worst element's |candidate - oracle| divided by its allowed error atol + "
       "rtol*|oracle|; <= 1 passes, 2 is twice the allowed error, inf a non-finite value where "
       "a finite one (or a different infinity) was expected"},
      {"atol", t.tol.atol},
      {"rtol", t.tol.rtol},
      {"rows_are", row_word(t.rows_are)},
  };
  nlohmann::json mism = nlohmann::json::object(), rows = nlohmann::json::object();
  for (const auto& [bh, n] : t.mismatches) mism[bh] = n;
  for (const auto& [bh, ranges] : t.rows) rows[bh] = ranges;
  j["mismatches"] = mism;
  j["rows"] = rows;
  if (t.rows_truncated > 0)
    j["rows_truncated"] = std::to_string(t.rows_truncated) + " more (batch, head) pairs fail";
  if (t.worst_row) {
    const WorstRow& w = *t.worst_row;
    nlohmann::json e = nlohmann::json::array(), c = nlohmann::json::array();
    for (double x : w.expected) e.push_back(number_json(x));
    for (double x : w.candidate) c.push_back(number_json(x));
    const bool query = t.rows_are == RowKind::query;
    j["worst_row"] = {{"batch", w.batch},
                      {"head", w.head},
                      {"row", w.row},
                      {"expected", e},
                      {"candidate", c},
                      {query ? "allowed_keys" : "allowed_queries", w.allowed},
                      {query ? "num_allowed_keys" : "num_allowed_queries", w.num_allowed},
                      {"fully_masked", w.fully_masked},
                      {query ? "padded_query" : "padded_key", w.padded}};
  }
  if (t.first_nonfinite)
    j["first_nonfinite"] = {{"index", index_json(t.first_nonfinite->index)},
                            {"candidate", number_json(t.first_nonfinite->candidate)},
                            {"expected", number_json(t.first_nonfinite->expected)}};
  if (t.reference_error) j["reference_error"] = reference_error_json(*t.reference_error);
  if (!t.probable_cause.empty()) j["probable_cause"] = t.probable_cause;
  return j;
}

nlohmann::json check_json(const CheckResult& r) {
  nlohmann::json j;
  j["oracle"] = r.oracle;
  j["pattern"] = r.pattern;
  const AttentionShape& s = r.shape;
  j["shape"] = {{"batch", s.batch},         {"num_heads", s.num_heads},
                {"seq_len_q", s.seq_len_q}, {"seq_len_k", s.seq_len_k},
                {"head_dim", s.head_dim},   {"head_dim_v", s.head_dim_v}};
  if (s.num_kv_heads != s.num_heads) j["shape"]["num_kv_heads"] = s.num_kv_heads;
  if (!r.score_mods.empty()) j["score_mods"] = r.score_mods;
  if (!r.layout.empty()) j["layout"] = r.layout;
  j["conventions"] = r.conventions;
  for (const TensorReport* t : r.tensors()) j[t->tensor] = tensor_json(*t);
  if (!r.gradient_oracle.empty()) j["gradient_oracle"] = r.gradient_oracle;
  if (!r.tolerance_rule.empty()) j["tolerance_rule"] = r.tolerance_rule;
  if (r.rows_not_compared >= 0) j["rows_not_compared"] = r.rows_not_compared;
  if (!r.probable_cause.empty()) j["probable_cause"] = r.probable_cause;
  if (!r.probes.is_null()) j["probes"] = r.probes;
  if (!r.hint.empty()) j["hint"] = r.hint;
  if (!r.compat.empty()) j["compat"] = r.compat;
  if (!r.global_mask.empty()) j["global_mask"] = r.global_mask;
  if (r.global_projections) j["global_projections"] = true;
  j["pass"] = r.pass;
  return j;
}

std::string tensor_line(const TensorReport& t) {
  const std::string tol = "atol " + g(t.tol.atol, 6) + ", rtol " + g(t.tol.rtol, 6);
  const std::string eot = "error/tolerance " + g(t.error_over_tolerance, 3);
  std::string compared = std::to_string(t.num_compared);
  if (t.num_compared < t.num_elements)
    compared += " compared of " + std::to_string(t.num_elements);
  std::string rule;
  if (t.reference_error) {
    const ReferenceErrorVerdict& v = *t.reference_error;
    rule = "; reference-error rule: max error " + g(v.candidate_max, 3) + ", mean " +
           g(v.candidate_mean, 3) + " against " + g(v.factor, 6) + " x naive " +
           low_dtype_name(v.naive_dtype) + "'s " + g(v.naive_max, 3) + ", " + g(v.naive_mean, 3) +
           " + floor " + g(v.floor, 3) + ": " + (v.pass ? "pass" : "fail");
  }
  if (t.nothing_compared)
    return t.tensor + ": nothing compared (0 of " + std::to_string(t.num_elements) +
           " elements: every " + row_word(t.rows_are) +
           " row is skipped); a check that compares nothing fails";
  if (t.pass)
    return t.tensor + ": ok (" + compared + " elements, greatest absolute difference " +
           g(t.max_abs_error, 3) + ", " + eot + "; " + tol + rule + ")";
  const double share = 100.0 * static_cast<double>(t.num_mismatched) /
                       static_cast<double>(std::max<int64_t>(t.num_compared, 1));
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", share);
  std::string s = t.tensor + ": mismatched elements " + std::to_string(t.num_mismatched) + " / " +
                  compared + " (" + pct + "%)";
  if (t.num_nonfinite)
    s += "; " + std::to_string(t.num_nonfinite) + " non-finite where the oracle is finite";
  s += "; greatest absolute difference " + g(t.max_abs_error, 6);
  if (!t.worst_index.empty())
    s += " at index " + index_text(t.worst_index) + " (candidate " + exact(t.worst_candidate) +
         ", oracle " + exact(t.worst_reference) + ")";
  s += "; greatest relative difference " + g(t.max_rel_error, 6);
  if (!std::isfinite(t.max_abs_error))  // the worst element is a NaN or an unmatched infinity
    s += " (over the elements where both are finite: absolute " + g(t.max_abs_error_finite, 6) +
         ", relative " + g(t.max_rel_error_finite, 6) + ")";
  s += "; allowed " + tol + "; " + eot;
  if (std::isinf(t.error_over_tolerance)) s += " (a non-finite mismatch: no budget covers it)";
  s += rule;
  if (!t.reason.empty()) s += ". " + t.reason;
  return s;
}

std::string check_text(const CheckResult& r) {
  std::string out;
  auto line = [&out](const std::string& s) { out += s + "\n"; };
  const std::vector<const TensorReport*> ts = r.tensors();
  bool nothing = true;  // no tensor compared anything
  for (const TensorReport* t : ts) nothing = nothing && t->nothing_compared;
  std::string head = r.pass ? "candidate matches the float64 oracle "
                            : "candidate does NOT match the float64 oracle ";
  if (!r.pass && nothing) head = "nothing compared against the float64 oracle ";
  head += r.oracle;
  if (!r.gradient_oracle.empty()) head += " / " + r.gradient_oracle;
  if (!r.tolerance_rule.empty()) head += " (tolerance rule " + r.tolerance_rule + ")";
  if (!r.compat.empty()) head += " (--compat " + r.compat + ")";
  line("sparseattn check: " + head);
  const AttentionShape& s = r.shape;
  line("pattern " + r.pattern + "; batch " + std::to_string(s.batch) + ", num_heads " +
       std::to_string(s.num_heads) +
       (s.num_kv_heads != s.num_heads ? ", num_kv_heads " + std::to_string(s.num_kv_heads) : "") +
       ", seq_len_q " + std::to_string(s.seq_len_q) +
       ", seq_len_k " + std::to_string(s.seq_len_k) + ", head_dim " + std::to_string(s.head_dim) +
       ", head_dim_v " + std::to_string(s.head_dim_v));
  if (!r.score_mods.empty()) line("scores " + r.score_mods);
  if (!r.layout.empty()) line("layout " + r.layout);
  if (r.conventions != Conventions{}.describe()) line("conventions " + r.conventions);
  for (const TensorReport* t : ts) line(tensor_line(*t));
  if (r.rows_not_compared >= 0)
    line("rows not compared: " + std::to_string(r.rows_not_compared) +
         " (batch, head, query row) triples of padded queries (--padded-queries any)");
  if (r.pass) return out;

  const TensorReport* first = nullptr;
  for (const TensorReport* t : ts)
    if (!t->pass && !first) first = t;
  if (first && first->worst_row)
    line("worst element: batch " + std::to_string(first->worst_row->batch) + ", head " +
         std::to_string(first->worst_row->head) + ", " + row_word(first->rows_are) + " row " +
         std::to_string(first->worst_row->row));
  for (const TensorReport* t : ts) {
    if (t->pass) continue;
    const std::string rows = std::string(row_word(t->rows_are)) + " rows ";
    for (const auto& [bh, ranges] : t->rows)
      line(t->tensor + " fails at (batch, head) " + bh + ": " + rows + ranges);
    if (t->rows_truncated > 0)
      line(t->tensor + ": " + std::to_string(t->rows_truncated) + " more (batch, head) pairs fail");
    if (t->worst_row) {
      const WorstRow& w = *t->worst_row;
      const bool query = t->rows_are == RowKind::query;
      line(t->tensor + " worst row batch " + std::to_string(w.batch) + ", head " +
           std::to_string(w.head) + ", row " + std::to_string(w.row) + ": expected " +
           values_text(w.expected) + ", candidate " + values_text(w.candidate) + "; " +
           (query ? "allowed keys " : "attending queries ") + (w.allowed.empty() ? "none" : w.allowed) +
           (w.fully_masked ? (query ? " (fully masked)" : " (attended by no query)") : "") +
           (w.padded ? (query ? " (padded query)" : " (padded key)") : ""));
    }
    if (t->first_nonfinite)
      line(t->tensor + " first non-finite at index " + index_text(t->first_nonfinite->index) +
           ": candidate " + exact(t->first_nonfinite->candidate) + ", oracle " +
           exact(t->first_nonfinite->expected));
  }
  // The cause of each failing group (forward o, lse; gradients), each named once.
  std::vector<std::string> causes;
  for (const TensorReport* t : ts)
    if (!t->pass && !t->probable_cause.empty() &&
        std::find(causes.begin(), causes.end(), t->probable_cause) == causes.end())
      causes.push_back(t->probable_cause);
  if (causes.empty() && !r.probable_cause.empty()) causes.push_back(r.probable_cause);
  for (const std::string& c : causes) {
    std::string of;
    if (causes.size() > 1)
      for (const TensorReport* t : ts)
        if (!t->pass && t->probable_cause == c) of += (of.empty() ? " of " : ", ") + t->tensor;
    line("probable cause" + of + ": " + c);
  }
  const bool unknown = causes.empty() || causes.front().rfind("unknown", 0) == 0;
  if (first && unknown) line("hint: " + reading_hint(*first));
  if (!r.hint.empty()) line("convention hint: " + r.hint);
  return out;
}

}  // namespace sparseattn::api
