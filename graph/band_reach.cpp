// g2_reach_band (band_reach.h): per side, the offsets first reached at depth D are the run
// (cum_{D-1}, cum_D] of the summed widths; an offset d is held by n - d ordered pairs.
#include "graph/band_reach.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "pattern/pattern.h"

namespace sparseattn::graph {

namespace {

// Ordered pairs with offset in (a, b]: sum over d = a+1 .. b of (n - d).
int64_t pairs_between(int64_t a, int64_t b, int64_t n) {
  if (b <= a) return 0;
  const int64_t count = b - a;
  return count * n - (a + 1 + b) * count / 2;
}

// One side (left: key before query, or right): adds pairs first reached at each depth into
// hops (grown as needed); returns the pairs never reached on this side.
int64_t side(const std::vector<int64_t>& widths, int64_t n, std::vector<int64_t>& hops) {
  const int64_t max_offset = n - 1;
  const int64_t layers = static_cast<int64_t>(widths.size());
  int64_t cum = 0;
  for (int64_t depth = 1; cum < max_offset; ++depth) {
    const int64_t w = widths[static_cast<size_t>(std::min(depth, layers) - 1)];
    if (w == 0 && depth >= layers) break;  // the repeating last layer adds nothing: stuck
    const int64_t next = std::min(max_offset, cum + w);
    if (static_cast<int64_t>(hops.size()) <= depth) hops.resize(static_cast<size_t>(depth) + 1, 0);
    hops[static_cast<size_t>(depth)] += pairs_between(cum, next, n);
    cum = next;
  }
  return pairs_between(cum, max_offset, n);
}

}  // namespace

std::optional<Band> band_of(const PatternSpec& spec, int64_t seq_len) {
  const int64_t top = std::max<int64_t>(seq_len - 1, 0);
  if (spec.key_padding_mask) return std::nullopt;
  if (spec.kind == PatternKind::per_head) {
    if (spec.per_head.empty()) return std::nullopt;
    Band u;
    for (const PatternSpec& h : spec.per_head) {
      const auto b = band_of(h, seq_len);
      if (!b) return std::nullopt;
      u.left = std::max(u.left, b->left);
      u.right = std::max(u.right, b->right);
    }
    return u;
  }
  if (spec.kind == PatternKind::dense) return Band{top, spec.causal ? 0 : top};
  if ((spec.kind == PatternKind::window || spec.kind == PatternKind::longformer) &&
      spec.global.empty() && spec.dilation == 1 && spec.window >= 0 &&
      spec.window_left.value_or(0) >= -1 && spec.window_right.value_or(0) >= -1) {
    // The (left, right) window (contract §3.3) or the symmetric one; -1 = unbounded.
    const BandParams b = sparseattn::band_of(spec, seq_len, seq_len);
    return Band{std::min(b.left, top), std::min(band_t_max(b), top)};
  }
  return std::nullopt;
}

int64_t band_nnz(const Band& band, int64_t n) {
  const auto one_side = [n](int64_t w) {  // sum over i = 0 .. n-1 of min(i, w)
    w = std::min(w, n - 1);
    return w * (w + 1) / 2 + (n - 1 - w) * w;
  };
  return n + one_side(band.left) + one_side(band.right);
}

ReachSummary g2_reach_band(const std::vector<Band>& layers, int64_t n, int64_t token) {
  require(!layers.empty(), "layers", 0, "must hold at least one layer");
  require(n >= 1, "seq_len", n, "must be an integer >= 1");
  require(token >= -1 && token < n, "token", token, "must be in [-1, " + std::to_string(n) + ")");
  std::vector<int64_t> lefts, rights;
  for (const Band& b : layers) {
    require(b.left >= 0 && b.right >= 0, "layers", b.left < 0 ? b.left : b.right,
            "band widths must be >= 0");
    lefts.push_back(b.left);
    rights.push_back(b.right);
  }
  ReachSummary s;
  s.level = Level::token;
  s.seq_len = n;
  s.num_layers = static_cast<int64_t>(layers.size());
  s.hops = {n};
  s.never = side(lefts, n, s.hops) + side(rights, n, s.hops);
  while (s.hops.size() > 1 && s.hops.back() == 0) s.hops.pop_back();
  s.token = token;
  if (token >= 0) {
    int64_t cl = 0, cr = 0;
    for (const Band& b : layers) {
      cl = std::min(token, cl + b.left);
      cr = std::min(n - 1 - token, cr + b.right);
      s.coverage.push_back(cl + cr + 1);
      s.span.push_back(std::max(cl, cr));
    }
  }
  return s;
}

std::optional<int64_t> band_first_reach(const std::vector<Band>& layers, int64_t n) {
  require(!layers.empty(), "layers", 0, "must hold at least one layer");
  if (n <= 1) return 0;
  const int64_t L = static_cast<int64_t>(layers.size());
  int64_t cum = 0;
  for (int64_t depth = 1;; ++depth) {
    const int64_t w = layers[static_cast<size_t>(std::min(depth, L) - 1)].left;
    if (w == 0 && depth >= L) return std::nullopt;
    cum += w;
    if (cum >= n - 1) return depth;
  }
}

std::optional<IntervalLayer> interval_layer_of(const PatternSpec& spec, int64_t n) {
  if (const auto b = band_of(spec, n)) return IntervalLayer{*b, 0, false};
  if (spec.kind != PatternKind::chunked || !spec.chunk_size || *spec.chunk_size < 1 ||
      spec.key_padding_mask || spec.mask)
    return std::nullopt;
  IntervalLayer l;
  l.chunk_size = std::min(*spec.chunk_size, std::max<int64_t>(n, 1));
  l.causal = spec.causal;
  return l;
}

int64_t interval_nnz(const IntervalLayer& y, int64_t n) {
  if (y.chunk_size == 0) return band_nnz(y.band, n);
  const auto pairs = [&y](int64_t c) { return y.causal ? c * (c + 1) / 2 : c * c; };
  const int64_t c = y.chunk_size;
  return n / c * pairs(c) + pairs(n % c);
}

ReachSummary g2_reach_interval(const std::vector<IntervalLayer>& layers, int64_t n, int64_t token,
                               std::optional<int64_t>* first_reach) {
  require(!layers.empty(), "layers", 0, "must be at least one layer");
  require(n >= 1, "seq_len", n, "must be an integer >= 1");
  require(token >= -1 && token < n, "token", token,
          "must be in [0, " + std::to_string(n) + "), or -1 for none");
  const int64_t L = static_cast<int64_t>(layers.size());
  std::vector<int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) lo[j] = hi[j] = j;
  ReachSummary s;
  s.level = Level::token;
  s.seq_len = n;
  s.num_layers = L;
  s.token = token;
  s.hops = {n};
  if (first_reach) *first_reach = n == 1 ? std::optional<int64_t>(0) : std::nullopt;
  for (int64_t depth = 1;; ++depth) {
    const IntervalLayer& y = layers[static_cast<size_t>(std::min(depth, L) - 1)];
    int64_t added = 0, coverage = 0, span = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t a = lo[j], b = hi[j];
      if (y.chunk_size == 0) {
        a = std::max<int64_t>(0, a - y.band.right);
        b = std::min(n - 1, b + y.band.left);
      } else {
        const int64_t c = y.chunk_size;
        if (!y.causal) a = a / c * c;
        b = std::min(n - 1, b / c * c + c - 1);
      }
      added += (b - a) - (hi[j] - lo[j]);
      lo[j] = a, hi[j] = b;
      if (token >= 0 && a <= token && token <= b) {
        ++coverage;
        span = std::max<int64_t>(span, std::abs(j - token));
      }
    }
    if (first_reach && !*first_reach && hi[0] == n - 1) *first_reach = depth;
    if (added > 0) {
      s.hops.resize(static_cast<size_t>(depth) + 1, 0);
      s.hops[static_cast<size_t>(depth)] = added;
    }
    if (token >= 0 && depth <= L) {
      s.coverage.push_back(coverage);
      s.span.push_back(span);
    }
    if (depth >= L && added == 0) break;  // the repeating last layer adds nothing: done
  }
  int64_t reached = 0;
  for (int64_t j = 0; j < n; ++j) reached += hi[j] - lo[j] + 1;
  s.never = n * n - reached;
  return s;
}

}  // namespace sparseattn::graph
