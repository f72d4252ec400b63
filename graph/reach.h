// Reachability of a layer stack: who can influence whom after L layers (contract §6).
//
// The ladder, read in order:
//   g0_reach_reference — the definition: a boolean matrix R_L (R_L[i][j]: token j reaches
//                        token i within L layers), R_L = R_{L-1} ∪ A_L · R_{L-1}, from
//                        per-row key lists. Serial, O(depth · nnz · n). Small n only.
//   g1_reach_bitset    — the same answer, fast: 64 sources per machine word (multi-source
//                        BFS, Then et al., VLDB 2014), only the frontier is pushed, full
//                        tiles of the canonical layout are pushed once per tile instead of
//                        once per (query, key) pair, OpenMP over source batches. Block
//                        patterns (every tile full) run on the block graph (level "block").
// Both return a ReachSummary; tests require them to be identical (integers, exactly).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/layer_graph.h"

namespace sparseattn::graph {

enum class Level { token, block };
const char* level_name(Level level);  // "token", "block"

// Everything the measures (measures.h) are computed from.
//
// Hop distance of the ordered pair (j, i): the smallest L such that j influences i through
// layers 1..L of the stack (the last layer repeating beyond it); 0 when i == j. For a stack
// of one repeated pattern it is the shortest-path length in that pattern's graph.
struct ReachSummary {
  Level level = Level::token;
  int64_t seq_len = 0;
  int64_t num_layers = 0;       // the stack's depth; coverage and span have this length
  std::vector<int64_t> hops;    // hops[d]: ordered pairs with hop distance d (hops[0] = seq_len);
                                // the last entry is nonzero (the saturation depth is size-1)
  int64_t never = 0;            // ordered pairs never connected, at any depth
  int64_t token = -1;           // the token whose receptive field is reported, or -1
  std::vector<int64_t> coverage;  // [num_layers] tokens that influence `token` after 1..L layers
  std::vector<int64_t> span;      // [num_layers] furthest offset |j - token| among them

  bool operator==(const ReachSummary& o) const {
    return level == o.level && seq_len == o.seq_len && num_layers == o.num_layers &&
           hops == o.hops && never == o.never && token == o.token &&
           coverage == o.coverage && span == o.span;
  }
};

// g0: the reference. Throws what validate_stack throws, InvalidArgument("token") for a
// token outside [-1, seq_len), and InvalidArgument("seq_len") above 4096 (it is O(n²)
// memory and O(depth · nnz · n) time: a reference, not a tool).
// distances: when non-null, resized to [seq_len, seq_len], row i = target, column j =
// source, entry = hop distance of (j, i) or -1 when never.
ReachSummary g0_reach_reference(const LayerStack& stack, int64_t token,
                                std::vector<int32_t>* distances = nullptr);

// Which level g1 works at. automatic: block when block_level_exact(), else token.
enum class LevelChoice { automatic, token, block };

// Largest graphs g1 accepts: token level up to kMaxTokenNodes tokens (O(n²/64) words of
// work per source sweep: 65536 tokens are minutes on 2 cores); block level up to
// kMaxTokenNodes blocks (seq_len 1,048,576 with block_size 16 or more).
inline constexpr int64_t kMaxTokenNodes = 65536;

// g1: the fast engine. Same contract and result as g0 (level says which graph was used);
// throws InvalidArgument("level") when block level is asked for a stack whose unions are
// not all full tiles, InvalidArgument("seq_len") above the limits above.
// distances as in g0 (expanded to tokens at block level); only for seq_len <= 4096.
ReachSummary g1_reach_bitset(const LayerStack& stack, int64_t token,
                             LevelChoice level = LevelChoice::automatic,
                             std::vector<int32_t>* distances = nullptr);

}  // namespace sparseattn::graph
