#include "graph/measures.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sparseattn::graph {

std::vector<double> connected_fraction(const ReachSummary& s) {
  const int64_t saturation = static_cast<int64_t>(s.hops.size()) - 1;
  const int64_t last = std::max(s.num_layers, saturation);
  const double pairs = static_cast<double>(s.seq_len) * static_cast<double>(s.seq_len);
  std::vector<double> fraction;
  int64_t connected = s.hops.empty() ? 0 : s.hops[0];
  for (int64_t L = 1; L <= last; ++L) {
    if (L < static_cast<int64_t>(s.hops.size())) connected += s.hops[L];
    fraction.push_back(static_cast<double>(connected) / pairs);
  }
  return fraction;
}

std::optional<int64_t> mixing_depth(const ReachSummary& s) {
  if (s.never > 0) return std::nullopt;
  return static_cast<int64_t>(s.hops.size()) - 1;
}

std::optional<int64_t> diameter(const ReachSummary& s) { return mixing_depth(s); }

std::optional<double> mean_shortest_path(const ReachSummary& s) {
  double sum = 0.0, pairs = 0.0;
  for (size_t d = 1; d < s.hops.size(); ++d) {
    sum += static_cast<double>(d) * static_cast<double>(s.hops[d]);
    pairs += static_cast<double>(s.hops[d]);
  }
  if (pairs == 0.0) return std::nullopt;
  return sum / pairs;
}

std::vector<int64_t> shortest_path(const LayerStack& stack, int64_t from, int64_t to) {
  validate_stack(stack);
  const int64_t n = stack.seq_len();
  const std::string range = "must be in [0, " + std::to_string(n) + ")";
  require(from >= 0 && from < n, "from", from, range);
  require(to >= 0 && to < n, "to", to, range);
  if (from == to) return {from};

  std::vector<const Pattern*> distinct;
  std::vector<HeadLayout> graphs;
  std::vector<int64_t> graph_of_layer;
  for (int64_t l = 0; l < stack.num_layers(); ++l) {
    const Pattern* p = stack.layers[l].get();
    auto it = std::find(distinct.begin(), distinct.end(), p);
    if (it == distinct.end()) {
      distinct.push_back(p);
      graphs.push_back(layer_union(*p));
      it = distinct.end() - 1;
    }
    graph_of_layer.push_back(it - distinct.begin());
  }
  // Block level: tokens of a block are interchangeable, so search the block graph.
  const bool block = block_level_exact(graphs);
  const int64_t b = block ? graphs[0].tile : 1;
  if (block) {
    if (from / b == to / b) return {from, to};  // the full diagonal tile: one hop
    for (HeadLayout& g : graphs) g = block_graph(g, 64);
  }
  const int64_t nodes = block ? graphs[0].seq_len_q : n;
  require(nodes <= kMaxTokenNodes, "seq_len", n,
          "the path search handles at most " + std::to_string(kMaxTokenNodes) + " nodes");
  const int64_t source = from / b, target = to / b;
  auto graph_at = [&](int64_t layer) -> const HeadLayout& {  // layer is 1-based
    return graphs[graph_of_layer[std::min(layer, stack.num_layers()) - 1]];
  };

  // out[k]: the nodes whose rows list key k (the transpose), per distinct graph, so each
  // layer pushes from the nodes that can carry something new instead of scanning all.
  std::vector<std::vector<int64_t>> out_ptr(graphs.size());
  std::vector<std::vector<int32_t>> out(graphs.size());
  std::vector<int32_t> keys;
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    out_ptr[gi].assign(static_cast<size_t>(nodes + 1), 0);
    for (int64_t x = 0; x < nodes; ++x) {
      row_keys_of(graphs[gi], x, keys);
      for (int32_t k : keys) ++out_ptr[gi][k + 1];
    }
    for (int64_t k = 0; k < nodes; ++k) out_ptr[gi][k + 1] += out_ptr[gi][k];
    out[gi].resize(static_cast<size_t>(out_ptr[gi][nodes]));
    std::vector<int64_t> fill(out_ptr[gi].begin(), out_ptr[gi].end() - 1);
    for (int64_t x = 0; x < nodes; ++x) {
      row_keys_of(graphs[gi], x, keys);
      for (int32_t k : keys) out[gi][fill[k]++] = static_cast<int32_t>(x);
    }
  }

  // depth[x]: the first layer after which `source` reaches x (-1: not yet). A node
  // reached after layer L - 1 stays reached (the residual path). While the pattern
  // repeats only the nodes new at the previous layer can reach anything new.
  std::vector<int64_t> depth(static_cast<size_t>(nodes), -1);
  depth[source] = 0;
  std::vector<int32_t> reached{static_cast<int32_t>(source)}, frontier = reached, fresh;
  int64_t layer = 0;
  while (depth[target] < 0) {
    ++layer;
    const int64_t gi = graph_of_layer[std::min(layer, stack.num_layers()) - 1];
    const std::vector<int32_t>& push = stack.same_as_previous(layer - 1) ? frontier : reached;
    fresh.clear();
    for (int32_t k : push)
      for (int64_t p = out_ptr[gi][k]; p < out_ptr[gi][k + 1]; ++p)
        if (depth[out[gi][p]] < 0) {
          depth[out[gi][p]] = layer;
          fresh.push_back(out[gi][p]);
        }
    if (fresh.empty() && layer >= stack.num_layers()) return {};  // saturated, never reached
    reached.insert(reached.end(), fresh.begin(), fresh.end());
    frontier.swap(fresh);
  }

  // Walk back from the target: at layer L a node either stayed (reached earlier) or was
  // reached through a key reached before layer L; take the smallest such key.
  std::vector<int64_t> chain{target};
  int64_t current = target;
  for (int64_t L = depth[target]; L >= 1; --L) {
    if (depth[current] < L) continue;
    row_keys_of(graph_at(L), current, keys);
    for (int32_t k : keys)
      if (depth[k] >= 0 && depth[k] < L) {
        current = k;
        break;
      }
    chain.push_back(current);
  }
  std::reverse(chain.begin(), chain.end());

  std::vector<int64_t> path;
  for (size_t c = 0; c < chain.size(); ++c) {
    if (c == 0) path.push_back(from);
    else if (c + 1 == chain.size()) path.push_back(to);
    else path.push_back(chain[c] * b);
  }
  return path;
}

}  // namespace sparseattn::graph
