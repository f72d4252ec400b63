// `info`'s result as data (what a pattern costs, contract §3; docs/patterns.md), and its one
// renderer: the JSON `info --json` prints (and Python's Pattern.info() returns, through
// info_json(pattern, head_dim) of api/results.h) and the text `info` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pattern/pattern.h"

namespace sparseattn::api {

// What a tiled kernel does with the layout: it computes every pair of every listed tile,
// partial ones included (tiled_flops, and the share of them spent on masked pairs),
// reads q once and k, v once per listed tile (bytes_tiled, float32) against every tensor
// once (bytes_min); and the layout's own memory (layout_bytes: row_ptr, col, bits_at,
// bits; heads that share a layout counted once). Key padding ignored, like the counts.
struct TileCost {
  int64_t tile_pairs = 0;
  double tiled_flops = 0.0, partial_tile_waste = 0.0;
  double bytes_min = 0.0, bytes_tiled = 0.0;  // bytes moved
  int64_t layout_bytes = 0;
};
TileCost tile_cost(const Pattern& pattern, int64_t head_dim);
nlohmann::json tile_cost_json(const TileCost& t);

struct InfoResult {
  std::string pattern;        // describe(spec)
  PatternSizes sizes;
  int64_t head_dim = 0;
  PatternStats stats;         // nnz, density, keys per row, empty rows, tiles
  double flops = 0.0, dense_flops = 0.0;  // per batch element (attention_flops)
  int64_t random_draws = 0, random_shortfall = 0;
  Shape random_draws_shape;
  std::string random_draws_layout;  // what the draws index, or "none"
  std::vector<std::string> clamped; // parameters canonicalized for these sizes
  bool key_padding = false;         // the counts ignore it
  TileCost tiles;
};

// Everything read off the materialized pattern; `head_dim` >= 1 for the FLOP counts.
InfoResult info_result(const Pattern& pattern, int64_t head_dim);

// pattern, num_heads, seq_len_q, seq_len_k, head_dim, nnz, dense_pairs, density,
// keys_per_row {min, mean, max}, empty_rows, tiles {listed, full, partial}, random_draws,
// random_draws_shape, random_draws_layout, random_shortfall, flops, dense_flops,
// flops_fraction, clamped, and tile_cost_json's fields.
nlohmann::json info_json(const InfoResult& r);

// The table `sparseattn info` prints, one "name  value" line per measure, "\n"-terminated.
std::string info_text(const InfoResult& r);

}  // namespace sparseattn::api
