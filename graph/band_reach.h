// g2_reach_band: reach of a stack whose every layer is a band, in closed form (contract §6.4).
//
// A band layer lets query i attend keys i - left .. i + right (clipped to [0, n)): a window of
// dilation 1 (left = right = window; causal: right = 0) or dense (left = right = n - 1;
// causal: right = 0). Intervals of consecutive integers that contain their centre compose
// into one interval with the widths summed, so after layers 1..D token i is reached by
// exactly i - (left_1 + ... + left_D) .. i + (right_1 + ... + right_D). The hop distance of
// (j, i) is therefore a function of the offset i - j alone, and every ReachSummary count is
// a sum over offsets: O(n + depth) time, O(depth) memory, for any seq_len (g1's token level
// stops at 65,536). Tests require g2 == g1 exactly wherever both run.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/reach.h"
#include "pattern/spec.h"

namespace sparseattn::graph {

struct Band {
  int64_t left = 0;   // keys i - left .. i (tokens), >= 0
  int64_t right = 0;  // keys i .. i + right (tokens), >= 0; 0 for a causal band
};

// The band a spec spells over seq_len tokens, or nullopt when it is not one: dense, window
// and longformer without global tokens, dilation 1, no explicit or padding mask; a per-head
// spec whose heads are all bands is their union (the widest left and right). Widths are
// clamped to seq_len - 1 (contract §3: the same pattern).
std::optional<Band> band_of(const PatternSpec& spec, int64_t seq_len);

// Allowed (query, key) pairs of one head of a band over seq_len tokens:
// sum over i of min(i, left) + min(n - 1 - i, right) + 1.
int64_t band_nnz(const Band& band, int64_t seq_len);

// The ReachSummary g1_reach_bitset(stack, token, LevelChoice::token) returns for a stack of
// these bands (level token; the last layer repeats past the stack). Throws
// InvalidArgument("layers") when empty, ("seq_len") when < 1, ("token") outside [-1, n).
ReachSummary g2_reach_band(const std::vector<Band>& layers, int64_t seq_len, int64_t token = -1);

// Hop distance of (0, n - 1): the depth at which the last query first reaches token 0
// (counted from 1; 0 when n == 1), the last layer repeating past the stack; nullopt when
// never.
std::optional<int64_t> band_first_reach(const std::vector<Band>& layers, int64_t seq_len);

// A layer of an interval stack (contract §6.4): a band, or a chunked layer (contract §3.14:
// query i attends the keys of its own chunk [c·C, (c+1)·C), causal: those <= i). Each maps
// an interval of consecutive tokens to an interval: forward, token j's influence after d
// layers is one interval F_d(j) ∋ j, and one layer widens it to
//   band (L, R):   [a − R, b + L]
//   chunked C:     [a, end(b)] causal, [start(a), end(b)] otherwise,
// where start(x) = C⌊x/C⌋ and end(x) = min(n − 1, C⌊x/C⌋ + C − 1), all clipped to [0, n).
// Unlike bands, chunked layers do not commute, so the reach depends on the order.
struct IntervalLayer {
  Band band;               // when chunk_size == 0
  int64_t chunk_size = 0;  // > 0: a chunked layer (clamped to seq_len)
  bool causal = false;     // chunked only
};

// band_of() as an IntervalLayer, or a chunked spec (one pattern, no padding mask); nullopt
// otherwise.
std::optional<IntervalLayer> interval_layer_of(const PatternSpec& spec, int64_t seq_len);

// Allowed pairs of one head: band_nnz for a band; a chunked layer sums over its chunks of
// c tokens (the last may be partial) c·(c + 1)/2 causal, c² otherwise.
int64_t interval_nnz(const IntervalLayer& layer, int64_t seq_len);

// The ReachSummary g1_reach_bitset(stack, token, LevelChoice::token) returns for a stack of
// these layers: per source token j the interval F_d(j), layer by layer, the last layer
// repeating until nothing changes: O(n · depth) time, O(n) memory, any seq_len. first_reach
// (when non-null): the hop distance of (0, n − 1), nullopt when never. Throws as
// g2_reach_band.
ReachSummary g2_reach_interval(const std::vector<IntervalLayer>& layers, int64_t seq_len,
                               int64_t token = -1,
                               std::optional<int64_t>* first_reach = nullptr);

}  // namespace sparseattn::graph
