// The graph view of a pattern (contract §6): a stack of attention layers as a directed graph
// on tokens, taken from the canonical layout every kernel computes (pattern).
//
// Edge j -> i in layer ℓ when query i of some head of layer ℓ may attend key j
// (information flows from key to query), plus the self edge i -> i of the residual path.
// A layer's edge set is the union over its heads. Token j influences token i after L
// layers iff a walk j = x0 -> x1 -> ... -> xL = i exists whose step ℓ is an edge of layer ℓ
// (self edges make "within L layers" and "after L layers" the same thing).
//
// Beyond the given stack the last layer repeats, so "until it saturates" is well defined
// for every stack: the Longformer stack of growing windows keeps its widest window.
//
// Sources: Zaheer et al. 2020 (BigBird), §2 and §3 (the graph view, diameter, expanders);
// Beltagy et al. 2020 (Longformer), §3.1 (receptive field ℓ·w, dilated ℓ·d·w).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pattern/layout.h"
#include "pattern/pattern.h"

namespace sparseattn::graph {

// A stack of layers, bottom (layer 1) first. Layers with identical patterns may share one
// Pattern object; the engines notice sharing and skip work (a pointer comparison).
struct LayerStack {
  std::vector<std::shared_ptr<const Pattern>> layers;  // [num_layers], >= 1

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  int64_t seq_len() const { return layers.at(0)->sizes.seq_len_q; }
  // The pattern of layer `l` (0-based); layers past the stack repeat the last one.
  const Pattern& layer(int64_t l) const {
    return *layers[static_cast<size_t>(l < num_layers() ? l : num_layers() - 1)];
  }
  // Whether layer l (0-based) has the same edges as layer l - 1 (true past the stack).
  bool same_as_previous(int64_t l) const {
    return l > 0 && (l >= num_layers() || layers[l] == layers[l - 1]);
  }
};

// A stack of `num_layers` layers all sharing `pattern` (the usual case).
LayerStack uniform_stack(std::shared_ptr<const Pattern> pattern, int64_t num_layers);

// Checks what the graph view needs and throws InvalidArgument naming the argument:
// at least one layer ("layers"), self-attention (seq_len_q == seq_len_k, "seq_len_k"),
// every layer the same seq_len ("layers[l].seq_len"), no key padding ("key_padding_mask":
// padding is a property of one batch element, not of the pattern), and seq_len below 2^31.
void validate_stack(const LayerStack& stack);

// The edges of one layer in the canonical tile form (a HeadLayout over seq_len tokens
// with the pattern's tile side): the union over heads of every allowed (query, key) pair,
// plus the diagonal (self edges). Built with LayoutBuilder, so a tile that the union
// fills completely is marked full. O(nnz of all heads + tiles · tile²/64).
HeadLayout layer_union(const Pattern& pattern);

// Block level: when every tile of every layer's union is full (a block pattern
// such as BigBird ITC; the diagonal tiles are present), all tokens of a tile have the same
// in- and out-edges, so distances between tokens are distances between their blocks
// (1 inside a block). The engines then work on the block graph: nb = ceil(seq_len / tile)
// nodes instead of seq_len, exact for every measure.
bool block_level_exact(const std::vector<HeadLayout>& unions);

// The block graph of a union whose tiles are all full: a HeadLayout over nb nodes (block
// index = node), node tile `node_tile`, edge b -> a when tile (a, b) is listed.
HeadLayout block_graph(const HeadLayout& union_layout, int64_t node_tile);

}  // namespace sparseattn::graph
