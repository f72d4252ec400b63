// One row of attention over an explicit key list, and the smallest key-set change that
// explains a candidate's row; see probe_rows.h.
#include "api/probe_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparseattn::api {

bool element_ok(double x, double ref, Tolerance tol) {
  if (!std::isfinite(ref) || !std::isfinite(x)) return x == ref;  // -inf = -inf matches
  return std::fabs(x - ref) <= tol.atol + tol.rtol * std::fabs(ref);
}

int64_t attend_row(const HeadView& hv, int64_t i, const std::vector<int64_t>& keys, double scale,
                   const std::optional<double>& masked, double* o, double* lse) {
  const int64_t D = hv.head_dim, Dv = hv.head_dim_v, Lk = hv.seq_len_k;
  const double* qi = hv.q + i * D;
  const ScoreMods* mods = hv.mods;
  const int64_t position = i + hv.offset;
  auto dot = [&](int64_t j) {
    double x = 0.0;
    for (int64_t d = 0; d < D; ++d) x += qi[d] * hv.k[j * D + d];
    if (mods == nullptr) return scale * x;
    if (hv.mistake == ScoreMistake::softcap_before_scale && mods->softcap) {
      ScoreMods rest = *mods;  // the ALiBi part, unchanged
      rest.softcap.reset();
      const double c = *mods->softcap;
      return pipeline_score(scale * c * std::tanh(x / c), rest, hv.batch, hv.head, position, j);
    }
    const int64_t p = hv.mistake == ScoreMistake::alibi_top_left ? i : position;
    return pipeline_score(scale * x, *mods, hv.batch, hv.head, p, j);
  };
  // The row's sink (contract §2.9): none for a padded query, which does not exist.
  const bool real = hv.pattern == nullptr || hv.pattern->query_valid(hv.batch, i);
  const double sink = mods != nullptr && real ? mods->sink(hv.head)
                                              : -std::numeric_limits<double>::infinity();
  std::fill(o, o + Dv, 0.0);
  thread_local std::vector<double> s;
  if (!masked) {  // a1_dense_masked: only the allowed keys enter the softmax
    if (keys.empty()) {
      *lse = sink;
      return 0;
    }
    s.resize(keys.size());
    double m = sink;
    for (size_t t = 0; t < keys.size(); ++t) m = std::max(m, s[t] = dot(keys[t]));
    double l = std::exp(sink - m);
    for (double x : s) l += std::exp(x - m);
    *lse = m + std::log(l);
    for (size_t t = 0; t < keys.size(); ++t) {
      const double p = std::exp(s[t] - *lse);
      const double* vj = hv.v + keys[t] * Dv;
      for (int64_t d = 0; d < Dv; ++d) o[d] += p * vj[d];
    }
    return static_cast<int64_t>(keys.size()) * (D + Dv);
  }
  // convention_oracle's masked_fill definition: every key enters, masked ones score VALUE.
  s.resize(static_cast<size_t>(Lk));
  double m = sink;
  size_t t = 0;
  for (int64_t j = 0; j < Lk; ++j) {
    const bool allowed = t < keys.size() && keys[t] == j;
    s[static_cast<size_t>(j)] = allowed ? dot(j) : *masked;
    t += allowed;
    m = std::max(m, s[static_cast<size_t>(j)]);
  }
  double z = std::exp(sink - m);
  for (int64_t j = 0; j < Lk; ++j) {
    const double p = std::exp(s[static_cast<size_t>(j)] - m);
    z += p;
    for (int64_t d = 0; d < Dv; ++d) o[d] += p * hv.v[j * Dv + d];
  }
  for (int64_t d = 0; d < Dv; ++d) o[d] /= z;
  *lse = m + std::log(z);
  return static_cast<int64_t>(keys.size()) * D + Lk * Dv;
}

void layout_row_keys(const Pattern& p, int64_t h, int64_t i, std::vector<int64_t>& keys) {
  thread_local std::vector<int32_t> raw;
  row_keys_of(p.head(h), i, raw);
  keys.assign(raw.begin(), raw.end());
}

void pattern_row_keys(const Pattern& p, int64_t b, int64_t h, int64_t i,
                      std::vector<int64_t>& keys) {
  keys.clear();
  if (!p.query_valid(b, i)) return;
  thread_local std::vector<int32_t> raw;
  row_keys_of(p.head_of(b, h), i, raw);  // a selection may differ by batch element (§3.16)
  for (int32_t j : raw)
    if (p.key_valid(b, j)) keys.push_back(j);
}

namespace {

constexpr int64_t kShort = 16;    // ranges up to this long are tried anywhere, and in pairs
constexpr size_t kLongAnchors = 8;
constexpr size_t kPairAnchors = 32;
constexpr size_t kConfirm = 16;   // screened changes confirmed exactly, smallest first

// A toggled range [a, b) of keys, with its contribution to the softmax sums.
struct Range {
  int64_t a, b;
  double dz, zabs;          // Σ ±w_j (+ added, − removed), Σ w_j
  std::vector<double> dn;   // Σ ±w_j v_j, [Dv]
};

struct Edit {
  int64_t a1, b1, a2, b2;  // a2 = b2 = 0: one range
  int64_t size;
};

}  // namespace

KeyChange smallest_key_change(const HeadView& hv, int64_t i, int64_t position,
                              const std::vector<int64_t>& keys, double scale, const double* o_c,
                              const double* lse_c, bool lse_base2, Tolerance o_tol,
                              Tolerance lse_tol) {
  const int64_t Lk = hv.seq_len_k, D = hv.head_dim, Dv = hv.head_dim_v;
  KeyChange none;
  for (int64_t x = 0; x < Dv; ++x)
    if (!std::isfinite(o_c[x])) return none;
  if (lse_c && std::isnan(*lse_c)) return none;
  const double* qi = hv.q + i * D;
  // Weights relative to the largest score over all keys (so no exp overflows).
  std::vector<double> w(static_cast<size_t>(Lk));
  double m = -std::numeric_limits<double>::infinity(), vmax = 0.0;
  for (int64_t j = 0; j < Lk; ++j) {
    double x = 0.0;
    for (int64_t d = 0; d < D; ++d) x += qi[d] * hv.k[j * D + d];
    w[static_cast<size_t>(j)] = scale * x;
    m = std::max(m, w[static_cast<size_t>(j)]);
  }
  for (double& x : w) x = std::exp(x - m);
  for (int64_t e = 0; e < Lk * Dv; ++e) vmax = std::max(vmax, std::fabs(hv.v[e]));
  std::vector<uint8_t> in(static_cast<size_t>(Lk), 0);
  for (int64_t j : keys) in[static_cast<size_t>(j)] = 1;
  double z0 = 0.0;
  std::vector<double> n0(static_cast<size_t>(Dv), 0.0);
  for (int64_t j : keys) {
    z0 += w[static_cast<size_t>(j)];
    for (int64_t d = 0; d < Dv; ++d) n0[d] += w[static_cast<size_t>(j)] * hv.v[j * Dv + d];
  }
  const double ln2 = std::log(2.0);
  // A loose first test from the running sums (their rounding allowed for); exact ones
  // are confirmed by attend_row below.
  auto screen = [&](double dz, double zabs, const double* dn1, const double* dn2) {
    const double z = z0 + dz, round = 1e-13 * (z0 + zabs);
    if (z <= round) {  // every key removed: o = 0, lse = -inf
      for (int64_t x = 0; x < Dv; ++x)
        if (std::fabs(o_c[x]) > 2 * o_tol.atol) return false;
      return !lse_c || *lse_c == -std::numeric_limits<double>::infinity();
    }
    for (int64_t x = 0; x < Dv; ++x) {
      const double o = (n0[x] + dn1[x] + (dn2 ? dn2[x] : 0.0)) / z;
      if (std::fabs(o - o_c[x]) > 2 * (o_tol.atol + o_tol.rtol * std::fabs(o)) + 4 * round * vmax / z)
        return false;
    }
    if (lse_c) {
      double l = m + std::log(z);
      if (lse_base2) l /= ln2;
      if (std::fabs(l - *lse_c) > 2 * (lse_tol.atol + lse_tol.rtol * std::fabs(l)) + 4 * round / z)
        return false;
    }
    return true;
  };
  std::vector<Edit> hits;
  std::vector<double> dn(static_cast<size_t>(Dv));
  auto extend = [&](int64_t j, double& dz, double& zabs) {
    const double sg = in[static_cast<size_t>(j)] ? -1.0 : 1.0, wj = w[static_cast<size_t>(j)];
    dz += sg * wj;
    zabs += wj;
    for (int64_t d = 0; d < Dv; ++d) dn[d] += sg * wj * hv.v[j * Dv + d];
  };
  // 1. Every range of up to kShort keys.
  for (int64_t a = 0; a < Lk; ++a) {
    double dz = 0.0, zabs = 0.0;
    std::fill(dn.begin(), dn.end(), 0.0);
    for (int64_t b = a + 1; b <= std::min(Lk, a + kShort); ++b) {
      extend(b - 1, dz, zabs);
      if (screen(dz, zabs, dn.data(), nullptr)) hits.push_back({a, b, 0, 0, b - a});
    }
  }
  // Anchors: where the key set changes, the sequence ends, the query's own position.
  std::vector<int64_t> anchors = {0, Lk};
  for (int64_t x = 1; x < Lk; ++x)
    if (in[static_cast<size_t>(x - 1)] != in[static_cast<size_t>(x)]) anchors.push_back(x);
  for (int64_t x : {position, position + 1})
    if (x > 0 && x < Lk) anchors.push_back(x);
  std::sort(anchors.begin(), anchors.end());
  anchors.erase(std::unique(anchors.begin(), anchors.end()), anchors.end());
  std::stable_sort(anchors.begin(), anchors.end(), [&](int64_t x, int64_t y) {
    return std::llabs(x - position) < std::llabs(y - position);
  });
  // 2. Longer ranges starting or ending at an anchor (the nearest kLongAnchors).
  for (size_t t = 0; t < std::min(anchors.size(), kLongAnchors); ++t) {
    const int64_t x = anchors[t];
    double dz = 0.0, zabs = 0.0;
    std::fill(dn.begin(), dn.end(), 0.0);
    for (int64_t b = x + 1; b <= Lk; ++b) {  // [x, b)
      extend(b - 1, dz, zabs);
      if (b - x > kShort && screen(dz, zabs, dn.data(), nullptr)) hits.push_back({x, b, 0, 0, b - x});
    }
    dz = zabs = 0.0;
    std::fill(dn.begin(), dn.end(), 0.0);
    for (int64_t a = x - 1; a >= 0; --a) {  // [a, x)
      extend(a, dz, zabs);
      if (x - a > kShort && screen(dz, zabs, dn.data(), nullptr)) hits.push_back({a, x, 0, 0, x - a});
    }
  }
  // 3. Pairs of short ranges at anchors (a window one wider on both sides, shifted, ...).
  std::vector<Range> ranges;
  for (size_t t = 0; t < std::min(anchors.size(), kPairAnchors); ++t) {
    const int64_t x = anchors[t];
    for (int dir : {1, -1}) {
      double dz = 0.0, zabs = 0.0;
      std::fill(dn.begin(), dn.end(), 0.0);
      for (int64_t len = 1; len <= kShort; ++len) {
        const int64_t j = dir > 0 ? x + len - 1 : x - len;
        if (j < 0 || j >= Lk) break;
        extend(j, dz, zabs);
        ranges.push_back({dir > 0 ? x : j, dir > 0 ? j + 1 : x, dz, zabs, dn});
      }
    }
  }
  for (size_t s = 0; s < ranges.size(); ++s)
    for (size_t t = s + 1; t < ranges.size(); ++t) {
      const Range &r1 = ranges[s], &r2 = ranges[t];
      if (r1.a < r2.b && r2.a < r1.b) continue;  // overlapping
      if (screen(r1.dz + r2.dz, r1.zabs + r2.zabs, r1.dn.data(), r2.dn.data()))
        hits.push_back({std::min(r1.a, r2.a), r1.a < r2.a ? r1.b : r2.b,
                        std::max(r1.a, r2.a), r1.a < r2.a ? r2.b : r1.b,
                        (r1.b - r1.a) + (r2.b - r2.a)});
    }
  // Confirm the smallest exactly.
  std::stable_sort(hits.begin(), hits.end(),
                   [](const Edit& x, const Edit& y) { return x.size < y.size; });
  std::vector<double> o(static_cast<size_t>(Dv));
  for (size_t t = 0; t < std::min(hits.size(), kConfirm); ++t) {
    const Edit& e = hits[t];
    std::vector<uint8_t> toggled(in);
    KeyChange c;
    for (auto [a, b] : {std::pair<int64_t, int64_t>{e.a1, e.b1}, {e.a2, e.b2}})
      for (int64_t j = a; j < b; ++j) {
        (in[static_cast<size_t>(j)] ? c.removed : c.added).push_back(j);
        toggled[static_cast<size_t>(j)] ^= 1;
      }
    std::sort(c.added.begin(), c.added.end());
    std::sort(c.removed.begin(), c.removed.end());
    std::vector<int64_t> changed;
    for (int64_t j = 0; j < Lk; ++j)
      if (toggled[static_cast<size_t>(j)]) changed.push_back(j);
    double lse = 0.0;
    attend_row(hv, i, changed, scale, std::nullopt, o.data(), &lse);
    bool ok = true;
    for (int64_t x = 0; x < Dv && ok; ++x) ok = element_ok(o_c[x], o[x], o_tol);
    if (ok && lse_c) ok = element_ok(*lse_c, lse_base2 ? lse / ln2 : lse, lse_tol);
    if (!ok) continue;
    c.found = true;
    return c;
  }
  return none;
}

}  // namespace sparseattn::api
