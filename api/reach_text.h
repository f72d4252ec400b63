// `reach`'s text (contract §6; docs/information-flow.md defines every number): the one
// rendering of compute_reach's result besides reach_json (api/results.h), written here so
// that every front end prints the same table.
#pragma once

#include <string>

#include "api/results.h"
#include "graph/layer_graph.h"

namespace sparseattn::api {

// The report `sparseattn reach` prints for one seq_len, "\n"-terminated: the stack (runs of
// equal layers), connected fraction per layer (with request.token: coverage, span and
// rollout evenness), mixing depth, diameter, mean shortest path, never-connected pairs,
// spectral gap, hop distances, the asked path, and `seconds` of wall time.
std::string reach_text(const ReachResult& r, const ReachRequest& request,
                       const graph::LayerStack& stack, double seconds);

}  // namespace sparseattn::api
