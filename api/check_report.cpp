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

namespace {

// An explicit per-head mask pattern: mask(h, i, j) for the pattern's sizes, its key padding.
Pattern mask_pattern(const Pattern& p,
                     const std::function<bool(int64_t, int64_t, int64_t)>& allowed) {
  const PatternSizes& z = p.sizes;
  Tensor<uint8_t> mask({z.num_heads, z.seq_len_q, z.seq_len_k}, 0);
  for (int64_t h = 0; h < z.num_heads; ++h)
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      for (int64_t j = 0; j < z.seq_len_k; ++j)
        mask.data[(h * z.seq_len_q + i) * z.seq_len_k + j] = allowed(h, i, j) ? 1 : 0;
  PatternSpec s;
  s.kind = PatternKind::explicit_mask;
  s.mask = std::move(mask);
  s.key_padding_mask = p.spec.key_padding_mask;
  return materialize(s, z);
}

}  // namespace

nlohmann::json probe_causes(const ProbeInputs& in) {
  nlohmann::json out;
  nlohmann::json tried = nlohmann::json::array();
  const PatternSizes& z = in.pattern.sizes;
  const AttentionShape s = attention_shape(in.q.shape, in.k.shape, in.v.shape);
  const double work = static_cast<double>(s.batch) * s.num_heads * s.seq_len_q * s.seq_len_k *
                      static_cast<double>(s.head_dim + s.head_dim_v);
  const RowShape rs{s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};

  // Rows with no allowed key, [B * H * Lq].
  std::vector<uint8_t> empty_row(static_cast<size_t>(s.batch * s.num_heads * s.seq_len_q), 0);
  bool any_empty = false;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const Tensor<uint8_t> d = dense_mask(in.pattern.head(h));
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        bool any = false;
        if (in.pattern.query_valid(b, i))
          for (int64_t j = 0; j < s.seq_len_k && !any; ++j)
            any = d.data[i * s.seq_len_k + j] && in.pattern.key_valid(b, j);
        const size_t row = static_cast<size_t>((b * s.num_heads + h) * s.seq_len_q + i);
        empty_row[row] = !any;
        any_empty = any_empty || !any;
      }
  }

  // Rule before probes: non-finite values exactly on fully masked rows.
  {
    bool nonfinite = false, only_empty = true;
    auto scan = [&](const Tensor<double>& c, const Tensor<double>& ref) {
      const int64_t width = ref.numel() / static_cast<int64_t>(empty_row.size());
      for (int64_t e = 0; e < ref.numel(); ++e)
        if (!std::isfinite(c.data[e]) && c.data[e] != ref.data[e]) {
          nonfinite = true;
          if (!empty_row[static_cast<size_t>(e / width)]) only_empty = false;
        }
    };
    scan(in.o, in.oracle.o);
    if (in.lse) scan(*in.lse, in.oracle.lse);
    if (nonfinite && only_empty) {
      out["probable_cause"] =
          "NaN/Inf on fully masked rows (no allowed key, e.g. a fully padded batch row): contract "
          "§2 gives them o = 0 and lse = -inf; a softmax over an empty set divides 0 by 0";
      out["probes"] = {{"tried", tried}};
      return out;
    }
  }

  if (work > kMaxProbeWork) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "skipped: %.3g multiply-adds per oracle run exceed the probe limit %.3g "
                  "(re-run check on a smaller slice, e.g. one head)",
                  work, kMaxProbeWork);
    out["probable_cause"] = "unknown: probes skipped above the size limit";
    out["probes"] = {{"tried", tried}, {"skipped", buf}};
    return out;
  }

  std::string cause;
  auto judge = [&](const std::string& name, const Tensor<double>& o_alt,
                   const Tensor<double>* lse_alt, const std::vector<uint8_t>& skip,
                   const std::vector<uint8_t>* only = nullptr) {
    if (!cause.empty()) return false;
    bool ok = matches(in.o, o_alt, in.o_tol, skip, only);
    if (ok && in.lse && lse_alt) ok = matches(*in.lse, *lse_alt, in.lse_tol, skip, only);
    tried.push_back({{"probe", name}, {"matches", ok}});
    return ok;
  };
  auto probe = [&](const std::string& name, const Pattern& p, const double* scale,
                   const Conventions& conv, const std::string& text) {
    if (!cause.empty()) return;
    AttentionResult alt;
    try {
      alt = convention_oracle(in.q, in.k, in.v, p, scale, conv);
    } catch (const std::exception&) {
      return;
    }
    if (judge(name, alt.o, &alt.lse, in.skip_row)) cause = text;
  };
  auto with_spec = [&](const PatternSpec& spec, Pattern* out_p) {
    try {
      *out_p = materialize(spec, z);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  const double given_scale = in.scale ? *in.scale : 1.0 / std::sqrt(double(s.head_dim));
  auto num = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };

  // lse only: o matches, lse in the other base.
  if (in.lse && matches(in.o, in.oracle.o, in.o_tol, in.skip_row)) {
    Tensor<double> l = in.oracle.lse;
    const double f = in.conv.lse_base2 ? std::log(2.0) : 1.0 / std::log(2.0);
    for (double& x : l.data) x *= f;
    if (judge(in.conv.lse_base2 ? "lse in base e" : "lse in base 2", in.oracle.o, &l, in.skip_row))
      cause = in.conv.lse_base2 ? "lse in base e (candidate matches with --lse-base e)"
                                : "lse in base 2 (candidate's lse = oracle lse / ln 2; pass --lse-base 2)";
  }
  // Scale.
  if (s.head_dim > 1) {
    const double sd = 1.0 / double(s.head_dim);
    if (std::fabs(sd - given_scale) > 1e-15)
      probe("scale 1/head_dim", in.pattern, &sd, in.conv,
            "scale 1/head_dim (candidate matches the oracle with --scale " + num(sd) + ")");
  }
  const double one = 1.0;
  if (given_scale != 1.0)
    probe("scale 1", in.pattern, &one, in.conv, "scale 1 (candidate matches the oracle with --scale 1)");
  const PatternKind kind = in.pattern.spec.kind;
  const bool banded = kind == PatternKind::window || kind == PatternKind::longformer ||
                      kind == PatternKind::random;
  // Window +-1.
  if (banded) {
    for (int delta : {-1, 1}) {
      PatternSpec sp = in.pattern.spec;
      if (sp.window + delta < 0) continue;
      sp.window += delta;
      Pattern p;
      if (with_spec(sp, &p))
        probe(delta < 0 ? "window one narrower" : "window one wider", p, in.scale, in.conv,
              std::string("window one ") + (delta < 0 ? "narrower" : "wider") +
                  " (candidate matches --window " + std::to_string(sp.window) + ")");
    }
  }
  // Causal toggled.
  if (banded || kind == PatternKind::dense) {
    PatternSpec sp = in.pattern.spec;
    sp.causal = !sp.causal;
    Pattern p;
    if (with_spec(sp, &p))
      probe(sp.causal ? "causal" : "not causal", p, in.scale, in.conv,
            sp.causal ? "causal mask applied (candidate matches with --causal)"
                      : "causal mask missing (candidate matches without --causal)");
  }
  // Causal alignment.
  if (in.pattern.spec.causal && z.seq_len_q != z.seq_len_k) {
    Conventions c = in.conv;
    c.causal_top_left = !c.causal_top_left;
    try {
      const Pattern p = apply_pattern_conventions(in.pattern, c);
      probe("causal top-left", p, in.scale, in.conv,
            "causal diagonal aligned top-left (candidate matches with --causal-align top-left)");
    } catch (const std::exception&) {
    }
  }
  // Global rows or columns computed as window rows.
  if ((kind == PatternKind::longformer || kind == PatternKind::random) &&
      !in.pattern.spec.global.empty() && z.seq_len_q == z.seq_len_k) {
    PatternSpec sp = in.pattern.spec;
    sp.global.clear();
    if (kind == PatternKind::longformer) sp.kind = PatternKind::window;
    sp.key_padding_mask.reset();
    Pattern no_global;
    if (with_spec(sp, &no_global)) {
      std::vector<uint8_t> is_global(static_cast<size_t>(z.seq_len_q), 0);
      for (int64_t g : in.pattern.spec.global)
        if (g >= 0 && g < z.seq_len_q) is_global[static_cast<size_t>(g)] = 1;
      std::vector<Tensor<uint8_t>> full, bare;
      for (int64_t h = 0; h < z.num_heads; ++h) {
        full.push_back(dense_mask(in.pattern.head(h)));
        bare.push_back(dense_mask(no_global.head(h)));
      }
      const int64_t m = z.seq_len_k;
      const Pattern rows_missing = mask_pattern(in.pattern, [&](int64_t h, int64_t i, int64_t j) {
        return (is_global[i] ? bare : full)[h].data[i * m + j] != 0;
      });
      probe("global rows missing", rows_missing, in.scale, in.conv,
            "global rows computed as window rows (query rows " +
                ranges_text(in.pattern.spec.global) + " must attend to every key)");
      const Pattern cols_missing = mask_pattern(in.pattern, [&](int64_t h, int64_t i, int64_t j) {
        return (is_global[j] && !is_global[i] ? bare : full)[h].data[i * m + j] != 0;
      });
      probe("global columns missing", cols_missing, in.scale, in.conv,
            "global columns missing (every query must attend to keys " +
                ranges_text(in.pattern.spec.global) + ")");
    }
  }
  // Fully masked rows given the mean of v (a large negative masked score).
  if (any_empty && !in.conv.masked_score && cause.empty()) {
    Conventions c = in.conv;
    c.masked_score = -1e9;
    const AttentionResult alt = convention_oracle(in.q, in.k, in.v, in.pattern, in.scale, c);
    if (judge("masked score -1e9", alt.o, nullptr, in.skip_row))
      cause = "fully masked rows hold the mean of v: masked scores set to a large negative "
              "constant instead of removed (pass --masked-score VALUE, e.g. -1e9)";
  }
  // Key padding polarity inverted; padded query rows not zeroed.
  if (in.pattern.has_key_padding()) {
    PatternSpec sp = in.pattern.spec;
    for (uint8_t& x : sp.key_padding_mask->data) x = x ? 0 : 1;
    Pattern p;
    if (with_spec(sp, &p))
      probe("key-padding polarity inverted", p, in.scale, in.conv,
            in.conv.key_padding_ignore
                ? "key-padding polarity inverted (candidate matches with --key-padding-polarity keep)"
                : "key-padding polarity inverted: 1 read as padding, as PyTorch's key_padding_mask "
                  "(pass --key-padding-polarity ignore)");
    if (!in.conv.padded_queries_any && cause.empty()) {
      std::vector<uint8_t> skip(static_cast<size_t>(s.batch * s.seq_len_q), 0);
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t i = 0; i < s.seq_len_q; ++i)
          skip[static_cast<size_t>(b * s.seq_len_q + i)] = !in.pattern.query_valid(b, i);
      if (judge("padded query rows not zeroed", in.oracle.o,
                in.lse ? &in.oracle.lse : nullptr, skip))
        cause = "padded query rows not zeroed: every other row matches (contract §2 zeroes them; "
                "pass --padded-queries any if they are unspecified in your convention)";
    }
  }
  // q/k/v (and o) given as [batch, seq_len, num_heads, d].
  if (!in.conv.bshd && cause.empty() && in.q.shape.size() == 4 && in.k.shape[2] == in.v.shape[2]) {
    try {
      const Tensor<double> q2 = swap_dims_1_2(in.q), k2 = swap_dims_1_2(in.k),
                           v2 = swap_dims_1_2(in.v);
      PatternSizes z2 = z;
      z2.num_heads = q2.shape[1];
      z2.seq_len_q = q2.shape[2];
      z2.seq_len_k = k2.shape[2];
      const Pattern p = materialize(in.raw_spec ? *in.raw_spec : in.pattern.spec, z2);
      AttentionResult alt = convention_oracle(q2, k2, v2, p, in.scale, in.conv);
      Tensor<double> o_alt = swap_dims_1_2(alt.o);
      if (judge("layout bshd", o_alt, nullptr, {}))
        cause = "q/k/v and o given as [batch, seq_len, num_heads, head_dim] (pass --layout bshd)";
    } catch (const std::exception&) {
    }
  }
  // BigBird: rows of the non-random part match, rows with random key blocks do not.
  if (kind == PatternKind::bigbird && in.pattern.spec.num_random_blocks > 0 && cause.empty()) {
    const int64_t bs = in.pattern.spec.block_size, nb = (s.seq_len_q + bs - 1) / bs;
    std::vector<uint8_t> fixed(empty_row.size(), 0);
    for (size_t row = 0; row < fixed.size(); ++row) {
      const int64_t blk = static_cast<int64_t>(row % s.seq_len_q) / bs;
      fixed[row] = blk == 0 || blk == nb - 1;
    }
    if (nb > 2 && judge("bigbird random blocks", in.oracle.o, in.lse ? &in.oracle.lse : nullptr,
                        in.skip_row, &fixed))
      cause = "BigBird random blocks differ from the pattern's: the rows without random keys "
              "(first and last block) match, the rows with random key blocks do not (export the "
              "pattern's draws with mask --random-table-out, or pass yours with --random-table)";
  }
  (void)rs;
  out["probable_cause"] = cause.empty() ? "unknown: no probe matched (a local error, not one of "
                                          "the usual convention mistakes)"
                                        : cause;
  out["probes"] = {{"tried", tried}};
  return out;
}

}  // namespace sparseattn::api
