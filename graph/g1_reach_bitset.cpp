// g1 — reachability with bitsets. Must equal g0_reach_reference exactly (integers; contract §4
// "integer products are compared exactly"); tests/graph/reach_agree_test.cpp enforces it.
//
// What changed since g0, and why:
//  1. 64 sources per machine word (multi-source BFS, Then et al., VLDB 2014): node i holds
//     a word whose bit k says "source s0 + k has reached i". One OR moves 64 sources.
//  2. Only the frontier (bits new at the previous layer) is pushed while the layer's
//     pattern repeats: A(R_{L-1}) = A(R_{L-2}) ∪ A(F_{L-1}) and A(R_{L-2}) ⊆ R_{L-1}. When
//     the pattern changes (a non-uniform stack) the whole reached set is pushed.
//  3. Tiles, not pairs: for a key tile the OR of its nodes' words is formed once; a full
//     tile then costs one OR per query row instead of one per (query, key) pair — the
//     BigBird block structure makes analysis cost O(tiles · tile), not O(nnz). Keys in
//     partial tiles (windows, random keys) are ORed one by one from a per-row list.
//  4. Only query tiles whose row lists an active key tile are visited (a transposed tile
//     index), so a narrow window frontier costs O(frontier), not O(seq_len), per layer.
//  5. Block level: when every tile of the union is full, tokens of a block are
//     interchangeable and the engine runs on the block graph with node weights
//     (the block's token count); the pair counts below are weighted accordingly.
//  6. OpenMP over source batches. Every batch's counts are integers summed after the
//     loop, so results are identical for any thread count (contract §4 determinism).
//
// Measured (2 shared cores; docs/information-flow.md): BigBird-base-like, seq_len 4096,
// 12 layers × 12 heads, token level: see the docs' timing table.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "graph/reach.h"

namespace sparseattn::graph {

namespace {

// The graph g1 sweeps: nodes (tokens, or blocks of tokens) and one tile-form edge set per
// distinct layer pattern.
struct NodeGraph {
  std::vector<HeadLayout> graphs;              // distinct layer graphs over the nodes
  // Per graph, the row loop's two inputs (item 3): full tiles per query tile, and the keys
  // that sit in partial tiles per node (a window's few keys, a random key), so a row
  // costs (full tiles + partial keys), not (listed tiles x tile).
  std::vector<std::vector<int64_t>> full_ptr;  // [num_q_tiles + 1]
  std::vector<std::vector<int32_t>> full_kt;
  std::vector<std::vector<int64_t>> pkey_ptr;  // [nodes + 1]
  std::vector<std::vector<int32_t>> pkeys;
  std::vector<int64_t> graph_of_layer;         // [num_layers] index into graphs
  std::vector<std::vector<int32_t>> q_tiles_of;  // per graph, CSR flattened below
  std::vector<std::vector<int64_t>> q_tiles_ptr; // per graph: [num_k_tiles + 1]
  std::vector<int64_t> start;                  // [nodes + 1] node a = tokens [start[a], start[a+1])
  int64_t nodes() const { return static_cast<int64_t>(start.size()) - 1; }
  int64_t weight(int64_t a) const { return start[a + 1] - start[a]; }
};

// For each key tile, the query tiles whose rows list it (the transpose of col).
void transpose_tiles(const HeadLayout& g, std::vector<int64_t>& ptr, std::vector<int32_t>& qts) {
  const int64_t nkt = g.num_k_tiles();
  ptr.assign(static_cast<size_t>(nkt + 1), 0);
  for (int32_t kt : g.col) ++ptr[kt + 1];
  for (int64_t kt = 0; kt < nkt; ++kt) ptr[kt + 1] += ptr[kt];
  qts.resize(g.col.size());
  std::vector<int64_t> fill(ptr.begin(), ptr.end() - 1);
  for (int64_t qt = 0; qt < g.num_q_tiles(); ++qt)
    for (int64_t e = g.row_ptr[qt]; e < g.row_ptr[qt + 1]; ++e)
      qts[fill[g.col[e]]++] = static_cast<int32_t>(qt);
}

// Splits a graph's tiles into the full tiles of each query tile and, per node, the keys
// of its partial tiles.
void split_tiles(const HeadLayout& g, std::vector<int64_t>& full_ptr, std::vector<int32_t>& full_kt,
                 std::vector<int64_t>& pkey_ptr, std::vector<int32_t>& pkeys) {
  const int64_t tile = g.tile, n = g.seq_len_q;
  full_ptr.assign(1, 0);
  pkey_ptr.assign(1, 0);
  for (int64_t qt = 0; qt < g.num_q_tiles(); ++qt) {
    for (int64_t e = g.row_ptr[qt]; e < g.row_ptr[qt + 1]; ++e)
      if (g.is_full(e)) full_kt.push_back(g.col[e]);
    full_ptr.push_back(static_cast<int64_t>(full_kt.size()));
    for (int64_t r = 0; r < std::min(tile, n - qt * tile); ++r) {
      for (int64_t e = g.row_ptr[qt]; e < g.row_ptr[qt + 1]; ++e) {
        if (g.is_full(e)) continue;
        const int64_t k0 = static_cast<int64_t>(g.col[e]) * tile;
        for (int64_t c = 0; c < std::min(tile, n - k0); ++c)
          if (g.tile_allows(e, r, c)) pkeys.push_back(static_cast<int32_t>(k0 + c));
      }
      pkey_ptr.push_back(static_cast<int64_t>(pkeys.size()));
    }
  }
}

// Per-thread state of one sweep; reused across the batches a thread runs.
struct Sweep {
  std::vector<uint64_t> seen, frontier, next, tile_or;
  std::vector<int32_t> seen_nodes, active, new_active, active_kt, visit;
  std::vector<int64_t> stamp;
  int64_t tick = 0;
  std::vector<int64_t> hops, coverage, span;

  explicit Sweep(const NodeGraph& ng, int64_t num_layers) {
    const size_t n = static_cast<size_t>(ng.nodes());
    seen.assign(n, 0);
    frontier.assign(n, 0);
    next.assign(n, 0);
    int64_t max_tiles = 0;
    for (const HeadLayout& g : ng.graphs) max_tiles = std::max(max_tiles, g.num_k_tiles());
    tile_or.assign(static_cast<size_t>(max_tiles), 0);
    stamp.assign(static_cast<size_t>(max_tiles), -1);
    coverage.assign(static_cast<size_t>(num_layers), 0);
    span.assign(static_cast<size_t>(num_layers), 0);
  }
};

// Token pairs carried by the bits of `word` landing on node i: weight(i) times the total
// weight of the sources set in the word.
int64_t weighted_pairs(const NodeGraph& ng, int64_t s0, uint64_t word, int64_t i,
                       bool uniform_batch) {
  int64_t sources = 0;
  if (uniform_batch) {
    sources = __builtin_popcountll(word) * ng.weight(s0);
  } else {
    for (uint64_t w = word; w; w &= w - 1) sources += ng.weight(s0 + __builtin_ctzll(w));
  }
  return sources * ng.weight(i);
}

// Receptive field of token `token` (inside node t_node) from this batch's sources.
void record_token(const NodeGraph& ng, int64_t s0, int64_t token, int64_t t_node,
                  const Sweep& sw, int64_t layer_index, std::vector<int64_t>& coverage,
                  std::vector<int64_t>& span) {
  for (uint64_t w = sw.seen[t_node]; w; w &= w - 1) {
    const int64_t a = s0 + __builtin_ctzll(w);
    coverage[layer_index] += ng.weight(a);
    const int64_t far = std::max(std::abs(ng.start[a] - token), std::abs(ng.start[a + 1] - 1 - token));
    span[layer_index] = std::max(span[layer_index], far);
  }
}

// One batch: sources s0 .. s0 + 63 (fewer at the end), all layers until saturation.
void sweep_batch(const NodeGraph& ng, const LayerStack& stack, int64_t s0, int64_t token,
                 int64_t t_node, Sweep& sw, int32_t* node_dist) {
  const int64_t n = ng.nodes(), num_layers = stack.num_layers();
  const int64_t count = std::min<int64_t>(64, n - s0);
  bool uniform_batch = true;
  for (int64_t k = 0; k < count; ++k) uniform_batch &= ng.weight(s0 + k) == ng.weight(s0);

  sw.seen_nodes.clear();
  sw.active.clear();
  for (int64_t k = 0; k < count; ++k) {
    sw.seen[s0 + k] = sw.frontier[s0 + k] = uint64_t{1} << k;
    sw.seen_nodes.push_back(static_cast<int32_t>(s0 + k));
    sw.active.push_back(static_cast<int32_t>(s0 + k));
    if (sw.hops.empty()) sw.hops.push_back(0);
    sw.hops[0] += ng.weight(s0 + k) * ng.weight(s0 + k);
  }

  for (int64_t l = 0;; ++l) {
    const int64_t gi = ng.graph_of_layer[std::min(l, num_layers - 1)];
    const HeadLayout& g = ng.graphs[gi];
    const std::vector<int64_t>& qptr = ng.q_tiles_ptr[gi];
    const std::vector<int32_t>& qts = ng.q_tiles_of[gi];
    const std::vector<int64_t>& fptr = ng.full_ptr[gi];
    const std::vector<int32_t>& fkt = ng.full_kt[gi];
    const std::vector<int64_t>& pptr = ng.pkey_ptr[gi];
    const std::vector<int32_t>& pkeys = ng.pkeys[gi];
    const int64_t tile = g.tile;
    // Item 2: the frontier suffices while the pattern repeats; otherwise push everything.
    const bool incremental = stack.same_as_previous(l);
    const std::vector<uint64_t>& src = incremental ? sw.frontier : sw.seen;
    const std::vector<int32_t>& src_nodes = incremental ? sw.active : sw.seen_nodes;

    // Item 3: OR of the source words per key tile; item 4: the query tiles to visit.
    sw.active_kt.clear();
    for (int32_t j : src_nodes) {
      const int64_t kt = j / tile;
      if (sw.tile_or[kt] == 0) sw.active_kt.push_back(static_cast<int32_t>(kt));
      sw.tile_or[kt] |= src[j];
    }
    ++sw.tick;
    sw.visit.clear();
    for (int32_t kt : sw.active_kt)
      for (int64_t p = qptr[kt]; p < qptr[kt + 1]; ++p)
        if (sw.stamp[qts[p]] != sw.tick) {
          sw.stamp[qts[p]] = sw.tick;
          sw.visit.push_back(qts[p]);
        }

    sw.new_active.clear();
    for (int32_t qt : sw.visit) {
      const int64_t rows = std::min(tile, n - qt * tile);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = qt * tile + r;
        uint64_t acc = 0;
        for (int64_t f = fptr[qt]; f < fptr[qt + 1]; ++f) acc |= sw.tile_or[fkt[f]];
        for (int64_t p = pptr[i]; p < pptr[i + 1]; ++p) acc |= src[pkeys[p]];
        const uint64_t fresh = acc & ~sw.seen[i];
        if (fresh) {
          sw.next[i] = fresh;
          sw.new_active.push_back(static_cast<int32_t>(i));
        }
      }
    }
    for (int32_t kt : sw.active_kt) sw.tile_or[kt] = 0;

    // Commit after every row is computed: `src` may be `seen` itself.
    const int64_t depth = l + 1;
    if (!sw.new_active.empty() && static_cast<int64_t>(sw.hops.size()) <= depth)
      sw.hops.resize(depth + 1, 0);
    for (int32_t i : sw.new_active) {
      if (sw.seen[i] == 0) sw.seen_nodes.push_back(i);
      sw.seen[i] |= sw.next[i];
      sw.hops[depth] += weighted_pairs(ng, s0, sw.next[i], i, uniform_batch);
      if (node_dist)
        for (uint64_t w = sw.next[i]; w; w &= w - 1)
          node_dist[i * n + s0 + __builtin_ctzll(w)] = static_cast<int32_t>(depth);
    }
    for (int32_t j : sw.active) sw.frontier[j] = 0;
    for (int32_t i : sw.new_active) {
      sw.frontier[i] = sw.next[i];
      sw.next[i] = 0;
    }
    sw.active.swap(sw.new_active);

    if (token >= 0 && l < num_layers)
      record_token(ng, s0, token, t_node, sw, l, sw.coverage, sw.span);
    // Saturated: past the stack, and the repeating last layer added nothing.
    if (depth >= num_layers && sw.active.empty()) break;
  }

  for (int32_t j : sw.seen_nodes) sw.seen[j] = 0;
  for (int32_t j : sw.active) sw.frontier[j] = 0;
}

}  // namespace

ReachSummary g1_reach_bitset(const LayerStack& stack, int64_t token, LevelChoice level,
                             std::vector<int32_t>* distances) {
  validate_stack(stack);
  const int64_t n = stack.seq_len(), num_layers = stack.num_layers();
  require(token >= -1 && token < n, "token", token,
          "must be in [0, " + std::to_string(n) + "), or -1 for none");
  require(!distances || n <= 4096, "seq_len", n,
          "at most 4096 when the full distance matrix is asked for");

  // One tile union per distinct pattern (layers sharing a Pattern share the union).
  NodeGraph ng;
  std::vector<const Pattern*> distinct;
  std::vector<HeadLayout> unions;
  for (int64_t l = 0; l < num_layers; ++l) {
    const Pattern* p = stack.layers[l].get();
    auto it = std::find(distinct.begin(), distinct.end(), p);
    if (it == distinct.end()) {
      distinct.push_back(p);
      unions.push_back(layer_union(*p));
      it = distinct.end() - 1;
    }
    ng.graph_of_layer.push_back(it - distinct.begin());
  }

  const bool block_ok = block_level_exact(unions);
  require(level != LevelChoice::block || block_ok, "level", "block",
          "needs every tile of every layer's union full (a block pattern such as bigbird)");
  const Level used = (level == LevelChoice::token || !block_ok) ? Level::token : Level::block;
  if (used == Level::block) {
    const int64_t b = unions[0].tile, nb = unions[0].num_q_tiles();
    require(nb <= kMaxTokenNodes, "seq_len", n,
            "block level handles at most " + std::to_string(kMaxTokenNodes) + " blocks");
    for (const HeadLayout& u : unions) ng.graphs.push_back(block_graph(u, 64));
    for (int64_t a = 0; a <= nb; ++a) ng.start.push_back(std::min(a * b, n));
  } else {
    require(n <= kMaxTokenNodes, "seq_len", n,
            "token level handles at most " + std::to_string(kMaxTokenNodes) +
                " tokens; block patterns go further at block level");
    ng.graphs = std::move(unions);
    for (int64_t a = 0; a <= n; ++a) ng.start.push_back(a);
  }
  ng.q_tiles_ptr.resize(ng.graphs.size());
  ng.q_tiles_of.resize(ng.graphs.size());
  for (auto* v : {&ng.full_ptr, &ng.pkey_ptr}) v->resize(ng.graphs.size());
  for (auto* v : {&ng.full_kt, &ng.pkeys}) v->resize(ng.graphs.size());
  for (size_t gi = 0; gi < ng.graphs.size(); ++gi) {
    transpose_tiles(ng.graphs[gi], ng.q_tiles_ptr[gi], ng.q_tiles_of[gi]);
    split_tiles(ng.graphs[gi], ng.full_ptr[gi], ng.full_kt[gi], ng.pkey_ptr[gi], ng.pkeys[gi]);
  }

  const int64_t nodes = ng.nodes();
  const int64_t t_node =
      token < 0 ? -1 : (used == Level::block ? token / unions.front().tile : token);
  std::vector<int32_t> node_dist;
  if (distances) {
    node_dist.assign(static_cast<size_t>(nodes * nodes), -1);
    for (int64_t a = 0; a < nodes; ++a) node_dist[a * nodes + a] = 0;
  }

  ReachSummary s;
  s.level = used;
  s.seq_len = n;
  s.num_layers = num_layers;
  s.token = token;
  if (token >= 0) {
    s.coverage.assign(static_cast<size_t>(num_layers), 0);
    s.span.assign(static_cast<size_t>(num_layers), 0);
  }

  const int64_t batches = (nodes + 63) / 64;
#pragma omp parallel
  {
    Sweep sw(ng, num_layers);
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < batches; ++b)
      sweep_batch(ng, stack, b * 64, token, t_node, sw, distances ? node_dist.data() : nullptr);
#pragma omp critical
    {
      if (sw.hops.size() > s.hops.size()) s.hops.resize(sw.hops.size(), 0);
      for (size_t d = 0; d < sw.hops.size(); ++d) s.hops[d] += sw.hops[d];
      for (int64_t l = 0; token >= 0 && l < num_layers; ++l) {
        s.coverage[l] += sw.coverage[l];
        s.span[l] = std::max(s.span[l], sw.span[l]);
      }
    }
  }

  // Block level: the n pairs (i, i) are at distance 0, the other pairs inside one block at
  // distance 1 (its diagonal tile is full); the sweep counted all weight(a)² at 0.
  int64_t inside = 0;
  for (int64_t a = 0; a < nodes; ++a) inside += ng.weight(a) * (ng.weight(a) - 1);
  if (inside > 0) {
    s.hops[0] -= inside;
    if (s.hops.size() < 2) s.hops.resize(2, 0);
    s.hops[1] += inside;
  }
  int64_t connected = 0;
  for (int64_t h : s.hops) connected += h;
  s.never = n * n - connected;

  if (distances) {
    distances->assign(static_cast<size_t>(n * n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t bi = used == Level::block ? i / unions.front().tile : i;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t bj = used == Level::block ? j / unions.front().tile : j;
        (*distances)[i * n + j] = i == j ? 0 : bi == bj ? 1 : node_dist[bi * nodes + bj];
      }
    }
  }
  return s;
}

}  // namespace sparseattn::graph
