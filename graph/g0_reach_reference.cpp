// g0 — reachability by definition (contract §6). Serial, readable, no bit tricks: this is the
// answer g1 must reproduce exactly.
//
// The graph is read per query row through row_keys_of() of every head (the same key lists
// the attention reference a2 walks), independently of layer_union(), so a test comparing
// g0 with g1 also checks the tile union g1 relies on.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "graph/reach.h"

namespace sparseattn::graph {

namespace {

// in_keys[i]: the tokens with an edge into i in this layer — every key any head lets
// query i attend, plus i itself (the residual path). Sorted, each once.
std::vector<std::vector<int32_t>> layer_in_keys(const Pattern& pattern) {
  const int64_t n = pattern.sizes.seq_len_q;
  std::vector<std::vector<int32_t>> in_keys(static_cast<size_t>(n));
  std::vector<int32_t> keys;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t>& row = in_keys[i];
    row.push_back(static_cast<int32_t>(i));
    for (int64_t h = 0; h < pattern.sizes.num_heads; ++h) {
      row_keys_of(pattern.head(h), i, keys);
      row.insert(row.end(), keys.begin(), keys.end());
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
  }
  return in_keys;
}

}  // namespace

const char* level_name(Level level) { return level == Level::token ? "token" : "block"; }

ReachSummary g0_reach_reference(const LayerStack& stack, int64_t token,
                                std::vector<int32_t>* distances) {
  validate_stack(stack);
  const int64_t n = stack.seq_len();
  require(n <= 4096, "seq_len", n, "g0 (the reference) accepts at most 4096 tokens; use g1");
  require(token >= -1 && token < n, "token", token,
          "must be in [0, " + std::to_string(n) + "), or -1 for none");

  // dist[i * n + j]: hop distance of (j, i) found so far, -1 while not reached.
  std::vector<int32_t> dist(static_cast<size_t>(n * n), -1);
  for (int64_t i = 0; i < n; ++i) dist[i * n + i] = 0;

  ReachSummary s;
  s.level = Level::token;
  s.seq_len = n;
  s.num_layers = stack.num_layers();
  s.token = token;

  std::vector<std::vector<int32_t>> in_keys;
  const Pattern* keys_of = nullptr;
  std::vector<uint8_t> reached(static_cast<size_t>(n * n)), next;
  for (int64_t i = 0; i < n; ++i) reached[i * n + i] = 1;

  for (int64_t layer = 1;; ++layer) {
    const Pattern& pattern = stack.layer(layer - 1);
    if (&pattern != keys_of) {
      in_keys = layer_in_keys(pattern);
      keys_of = &pattern;
    }
    // R_L[i][j] = OR over k in in_keys[i] of R_{L-1}[k][j]: j reaches a key of i within
    // L - 1 layers, and layer L carries it to i (k == i is the residual path).
    next.assign(reached.size(), 0);
    for (int64_t i = 0; i < n; ++i)
      for (int32_t k : in_keys[i])
        for (int64_t j = 0; j < n; ++j)
          if (reached[k * n + j]) next[i * n + j] = 1;

    bool changed = false;
    for (int64_t p = 0; p < n * n; ++p) {
      if (next[p] && !reached[p]) {
        dist[p] = static_cast<int32_t>(layer);
        changed = true;
      }
    }
    reached.swap(next);

    if (token >= 0 && layer <= s.num_layers) {
      int64_t coverage = 0, span = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (!reached[token * n + j]) continue;
        ++coverage;
        span = std::max<int64_t>(span, std::abs(j - token));
      }
      s.coverage.push_back(coverage);
      s.span.push_back(span);
    }
    // Saturated: the stack is done and the repeating last layer added nothing, so it
    // never will (the same step applied to the same set).
    if (layer >= s.num_layers && !changed) break;
  }

  for (int32_t d : dist) {
    if (d < 0) {
      ++s.never;
      continue;
    }
    if (static_cast<size_t>(d) >= s.hops.size()) s.hops.resize(d + 1, 0);
    ++s.hops[d];
  }
  if (distances) *distances = std::move(dist);
  return s;
}

}  // namespace sparseattn::graph
