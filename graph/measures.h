// The measures of information flow, each a pure function of a ReachSummary
// (reach.h) or of the stack. docs/information-flow.md defines each one in words and says
// which paper argument it makes measurable.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/layer_graph.h"
#include "graph/reach.h"

namespace sparseattn::graph {

// connected_fraction()[L-1]: fraction of the seq_len² ordered pairs (j, i), i == j
// included, such that j influences i after L layers; L = 1 .. max(num_layers, saturation
// depth). Reaches 1 exactly when every pair is connected.
std::vector<double> connected_fraction(const ReachSummary& s);

// Smallest L connecting every pair; nullopt ("never") when some pair is never connected
// (e.g. one dilation d > 1 everywhere). 0 for seq_len 1.
std::optional<int64_t> mixing_depth(const ReachSummary& s);

// Largest hop distance over all pairs; nullopt when some pair is never connected. With
// self edges in every layer it equals mixing_depth (the docs explain why both are named).
std::optional<int64_t> diameter(const ReachSummary& s);

// Mean hop distance over the connected ordered pairs with i != j (the disconnected ones
// are counted in ReachSummary::never, not here); nullopt when there is none (seq_len 1).
std::optional<double> mean_shortest_path(const ReachSummary& s);

// A shortest chain of positions from token `from` to token `to` (from first): position
// k + 1 attends position k in some head of the layer that carries the step. Empty when
// `to` is never reached. Uses the block graph when block_level_exact() (then intermediate
// positions are the first token of their block: any token of a block would do).
// Throws InvalidArgument("from"/"to") for positions outside [0, seq_len).
std::vector<int64_t> shortest_path(const LayerStack& stack, int64_t from, int64_t to);

}  // namespace sparseattn::graph
