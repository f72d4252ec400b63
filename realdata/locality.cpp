// Locality analysis of dense attention; definitions in locality.h.
#include "realdata/locality.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pattern/band.h"

namespace sparseattn::realdata {

std::vector<int64_t> default_windows() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

namespace {

// One (batch, head): q_h [Lq, D], k_h [Lk, D] contiguous.
HeadLocality analyze_head(const double* q_h, const double* k_h, int64_t Lq, int64_t Lk,
                          int64_t D, double scale, const HeadLayout& layout,
                          const std::vector<int64_t>& windows) {
  HeadLocality r;
  r.windows.resize(windows.size());
  std::vector<double> p(static_cast<size_t>(Lk));
  std::vector<double> prefix(static_cast<size_t>(Lk) + 1);  // prefix[j] = Σ_{j' < j} P_ij'
  std::vector<int32_t> keys;
  std::vector<double> window_mass(windows.size(), 0.0), window_size(windows.size(), 0.0);
  double mass = 0.0, allowed = 0.0, distance = 0.0;
  double min_row = std::numeric_limits<double>::infinity();

  for (int64_t i = 0; i < Lq; ++i) {
    // Dense softmax of row i, stabilized by its maximum.
    const double* qi = q_h + i * D;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < Lk; ++j) {
      const double* kj = k_h + j * D;
      double s = 0.0;
      for (int64_t c = 0; c < D; ++c) s += qi[c] * kj[c];
      p[j] = scale * s;
      m = std::max(m, p[j]);
    }
    double z = 0.0;
    for (int64_t j = 0; j < Lk; ++j) z += (p[j] = std::exp(p[j] - m));
    const int64_t pos = i + Lk - Lq;  // bottom-right alignment (contract §3)
    prefix[0] = 0.0;
    for (int64_t j = 0; j < Lk; ++j) {
      p[j] /= z;
      prefix[j + 1] = prefix[j] + p[j];
      distance += p[j] * static_cast<double>(std::llabs(j - pos));
    }

    row_keys_of(layout, i, keys);
    double row_mass = 0.0;
    for (int32_t j : keys) row_mass += p[j];
    mass += row_mass;
    allowed += static_cast<double>(keys.size()) / static_cast<double>(Lk);
    min_row = std::min(min_row, row_mass);

    // Window keys of row i are the contiguous range [pos + t_lo, pos + t_hi] (dilation
    // 1), so a prefix-sum difference gives their mass.
    for (size_t w = 0; w < windows.size(); ++w) {
      const BandSteps st = band_steps(BandParams{Lq, Lk, windows[w], windows[w], 1, false}, i);
      if (st.count() == 0) continue;
      window_mass[w] += prefix[pos + st.t_hi + 1] - prefix[pos + st.t_lo];
      window_size[w] += static_cast<double>(st.count()) / static_cast<double>(Lk);
    }
  }

  const double rows = static_cast<double>(Lq);
  r.pattern_mass = mass / rows;
  r.pattern_uniform = allowed / rows;
  r.pattern_bias = allowed > 0.0 ? mass / allowed : 0.0;
  r.pattern_mass_min_row = min_row;
  r.mean_distance = distance / rows;
  for (size_t w = 0; w < windows.size(); ++w) {
    r.windows[w].window = windows[w];
    r.windows[w].mass = window_mass[w] / rows;
    r.windows[w].uniform = window_size[w] / rows;
    r.windows[w].bias = window_size[w] > 0.0 ? window_mass[w] / window_size[w] : 0.0;
  }
  return r;
}

}  // namespace

std::vector<HeadLocality> analyze_locality(const Tensor<double>& q, const Tensor<double>& k,
                                           const Pattern& pattern,
                                           const std::vector<int64_t>& windows,
                                           const double* scale) {
  const Shape qs = as_rank4(q.shape, "q");
  const Shape ks = as_rank4(k.shape, "k");
  require(ks[0] == qs[0], "k batch", ks[0], "must equal q's batch (" + to_text(qs[0]) + ")");
  require(ks[1] == qs[1], "k num_heads", ks[1],
          "must equal q's num_heads (" + to_text(qs[1]) + ")");
  require(ks[3] == qs[3], "k head_dim", ks[3],
          "must equal q's head_dim (" + to_text(qs[3]) + ")");
  require(qs[2] >= 1 && ks[2] >= 1 && qs[3] >= 1, "q", shape_text(q.shape),
          "seq_len and head_dim must be >= 1");
  const int64_t B = qs[0], H = qs[1], Lq = qs[2], Lk = ks[2], D = qs[3];
  const PatternSizes& s = pattern.sizes;
  require(s.num_heads == H && s.seq_len_q == Lq && s.seq_len_k == Lk, "pattern",
          "[heads=" + to_text(s.num_heads) + ", seq_len_q=" + to_text(s.seq_len_q) +
              ", seq_len_k=" + to_text(s.seq_len_k) + "]",
          "must be built for q/k's [heads=" + to_text(H) + ", seq_len_q=" + to_text(Lq) +
              ", seq_len_k=" + to_text(Lk) + "]");
  for (int64_t w : windows) require(w >= 0, "windows", w, "every width must be >= 0");
  const double sc = resolve_scale(scale, D);

  std::vector<HeadLocality> out(static_cast<size_t>(B * H));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    HeadLocality r = analyze_head(q.ptr() + bh * Lq * D, k.ptr() + bh * Lk * D, Lq, Lk, D, sc,
                                  pattern.head(h), windows);
    r.batch = b;
    r.head = h;
    out[static_cast<size_t>(bh)] = std::move(r);
  }
  return out;
}

std::string locality_json(const std::vector<HeadLocality>& heads, const Pattern& pattern) {
  using nlohmann::json;
  json j;
  j["pattern"] = describe(pattern.spec);
  j["seq_len_q"] = pattern.sizes.seq_len_q;
  j["seq_len_k"] = pattern.sizes.seq_len_k;
  j["definitions"] = {
      {"P", "dense softmax over all keys, float64"},
      {"mass", "M(S) = mean over query rows of sum_{j in S(i)} P_ij"},
      {"uniform", "U(S) = mean over query rows of |S(i)| / seq_len_k"},
      {"bias", "B(S) = M(S) / U(S); 1 = no preference for S"},
      {"window", "S(i) = {j : |j - p_i| <= w}, one-sided width w, p_i = i + seq_len_k - seq_len_q"},
      {"mean_distance", "mean over rows of sum_j P_ij |j - p_i| (tokens)"}};
  json list = json::array();
  std::vector<double> masses;
  for (const HeadLocality& h : heads) {
    json w = json::array();
    for (const WindowMass& m : h.windows)
      w.push_back({{"window", m.window}, {"mass", m.mass}, {"uniform", m.uniform},
                   {"bias", m.bias}});
    list.push_back({{"batch", h.batch},
                    {"head", h.head},
                    {"pattern_mass", h.pattern_mass},
                    {"pattern_uniform", h.pattern_uniform},
                    {"pattern_bias", h.pattern_bias},
                    {"pattern_mass_min_row", h.pattern_mass_min_row},
                    {"mean_distance", h.mean_distance},
                    {"windows", w}});
    masses.push_back(h.pattern_mass);
  }
  j["heads"] = list;
  if (!masses.empty()) {
    std::sort(masses.begin(), masses.end());
    j["summary"] = {{"pattern_mass_min", masses.front()},
                    {"pattern_mass_median", masses.size() % 2
                                                ? masses[masses.size() / 2]
                                                : 0.5 * (masses[masses.size() / 2 - 1] +
                                                         masses[masses.size() / 2])},
                    {"pattern_mass_max", masses.back()}};
  }
  return j.dump(2);
}

}  // namespace sparseattn::realdata
