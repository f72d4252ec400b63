// sparseattn info — what a pattern costs, before running anything.
//
//   sparseattn info --seq-len N|A:B|A,B,C [--seq-len-k M] [--num-heads H] [--head-dim D]
//                   [--json] [pattern flags | --pattern-file P.json]
//   sparseattn info --preset NAME --seq-len N|A:B|A,B,C [--layer L] [--json]   (per layer and
//                   in total: FLOPs, KV-cache bytes, speedup bound; cli/presets.h)
//
// Everything is read off the materialized pattern (pattern_stats, attention_flops): nnz,
// density, keys per query row, tiles of the canonical layout, the random draws that
// could not be made, and FLOPs (4 * nnz * head_dim per batch element, the FlashAttention
// paper's count) against dense attention's 4 * H * N * M * head_dim. Parameters beyond the
// sequence are shown as materialize() canonicalized them, each change on a "clamped" line.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/presets.h"
#include "api/inputs.h"
#include "api/results.h"
#include "api/seq_range.h"
#include "core/error.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct InfoArgs {
  SizeFlags sizes;
  int64_t head_dim = 64;
  bool json = false;
  PatternFlags pattern;
  std::string preset;  // --preset NAME (cli/presets.h), with --layer L
  int64_t layer = 0;
  CLI::Option* layer_flag = nullptr;
  CLI::App* cmd = nullptr;
};

// One length: the table, or one JSON object (appended to `rows` when given, else printed).
void run_info(const InfoArgs& a, nlohmann::json* rows = nullptr) {
  require(a.head_dim >= 1, "--head-dim", a.head_dim, "must be an integer >= 1");
  const PatternSizes sizes = to_sizes(a.sizes, a.pattern);
  const Pattern pattern = build_pattern(a.pattern, sizes);
  const PatternStats st = pattern_stats(pattern);
  const double flops = attention_flops(st, a.head_dim, a.head_dim);
  PatternStats dense = st;
  dense.nnz = st.dense_pairs;
  const double dense_flops = attention_flops(dense, a.head_dim, a.head_dim);
  const int64_t random_draws = pattern.random_draws.numel();

  if (a.json) {
    const nlohmann::json j = info_json(pattern, a.head_dim);  // tile_json's fields included
    if (rows) rows->push_back(j);
    else std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("pattern       {}\n", describe(pattern.spec))
            << fmt::format("sizes         num_heads {}, seq_len_q {}, seq_len_k {}, head_dim {}\n",
                           sizes.num_heads, sizes.seq_len_q, sizes.seq_len_k, a.head_dim)
            << fmt::format("nnz           {} allowed (head, query, key) triples of {}\n", st.nnz,
                           st.dense_pairs)
            << fmt::format("density       {:.6f}\n", st.density)
            << fmt::format("keys per row  min {}, mean {:.2f}, max {}\n", st.row_min,
                           st.row_mean, st.row_max)
            << fmt::format("empty rows    {} (o = 0, lse = -inf)\n", st.empty_rows)
            << fmt::format("tiles         {} listed: {} full, {} partial\n", st.num_tiles,
                           st.full_tiles, st.num_tiles - st.full_tiles)
            << fmt::format("random draws  {} made, {} short (fewer candidates than asked)\n",
                           random_draws - pattern.random_shortfall, pattern.random_shortfall)
            << fmt::format("FLOPs         {:.4g} per batch element vs dense {:.4g} ({:.4f} of dense)\n",
                           flops, dense_flops, dense_flops > 0 ? flops / dense_flops : 0.0);
  // contract §3: parameters beyond the sequence mean their clamped value; say which.
  for (const std::string& c : pattern.clamped)
    std::cout << fmt::format("clamped       {} (beyond the sequence: the same pattern)\n", c);
  if (pattern.has_key_padding())
    std::cout << "note          counts ignore --key-padding-mask (it varies per batch element)\n";
  const nlohmann::json t = tile_json(pattern, a.head_dim);
  std::cout << fmt::format("tiled FLOPs   {:.4g}: every pair of every listed tile ({:.1f}% spent on "
                           "masked pairs of partial tiles)\n",
                           t["tiled_flops"].get<double>(), 100 * t["partial_tile_waste"].get<double>())
            << fmt::format("bytes         {:.4g} moved by a tiled float32 kernel (k, v once per listed "
                           "tile); {:.4g} with every tensor once\n",
                           t["bytes_tiled"].get<double>(), t["bytes_min"].get<double>())
            << fmt::format("layout        {} bytes (row_ptr, col, tile masks; shared heads once)\n",
                           t["layout_bytes"].get<int64_t>());
}

// --seq-len N, or a sweep (A:B, A,B,C): one table row, or with --json one object of a JSON
// array, per n.
void run_info_command(const InfoArgs& a) {
  if (!a.preset.empty()) {
    std::vector<std::string> fixed = pattern_flag_names();
    for (const char* f : {"--num-heads", "--head-dim", "--seq-len-k"}) fixed.push_back(f);
    refuse_overridden_flags(a.cmd, a.preset, fixed);
    return run_info_preset(a.preset, a.sizes.seq_len_text,
                           a.layer_flag->count() ? std::optional<int64_t>(a.layer) : std::nullopt,
                           a.json);
  }
  require(!a.layer_flag->count(), "--layer", a.layer, "selects a layer of a --preset; give --preset");
  const std::vector<int64_t> seq_lens = parse_seq_lens("--seq-len", a.sizes.seq_len_text);
  InfoArgs one = a;
  if (!is_seq_len_sweep(a.sizes.seq_len_text)) {
    one.sizes.seq_len = seq_lens.front();
    return run_info(one);
  }
  require(!a.sizes.seq_len_k_flag->count(), "--seq-len-k", a.sizes.seq_len_k,
          "a --seq-len sweep is self-attention (seq_len_k = seq_len); leave it out");
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json)
    std::cout << fmt::format("{:>8} {:>14} {:>10} {:>9} {:>9} {:>9} {:>12} {:>12} {:>12} {:>12}\n",
                             "seq_len", "nnz", "density", "keys/row", "full", "partial", "FLOPs",
                             "tiled FLOPs", "bytes tiled", "layout B");
  for (const int64_t n : seq_lens) {
    one.sizes.seq_len = n;
    one.json = true;
    run_info(one, &rows);
    const nlohmann::json& j = rows.back();
    if (!a.json)
      std::cout << fmt::format("{:>8} {:>14} {:>10.6f} {:>9.1f} {:>9} {:>9} {:>12.4g} {:>12.4g} {:>12.4g} {:>12}\n",
                               n, j["nnz"].get<int64_t>(), j["density"].get<double>(),
                               j["keys_per_row"]["mean"].get<double>(), j["tiles"]["full"].get<int64_t>(),
                               j["tiles"]["partial"].get<int64_t>(), j["flops"].get<double>(),
                               j["tiled_flops"].get<double>(), j["bytes_tiled"].get<double>(),
                               j["layout_bytes"].get<int64_t>())
                << std::flush;
  }
  if (a.json) std::cout << rows.dump(2) << "\n";
}

}  // namespace

void register_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "info", "a pattern's nnz, density, keys per row, tiles and FLOPs versus dense");
  add_size_flags(cmd, args->sizes, /*allow_range=*/true);
  cmd->add_option("--head-dim", args->head_dim, "D: head dimension for the FLOP count, integer >= 1")
      ->capture_default_str();
  cmd->add_flag("--json", args->json,
                "print one JSON object instead of the table (a JSON array, one object per n, for "
                "a --seq-len sweep)");
  add_pattern_flags(cmd, args->pattern);
  cmd->add_option("--preset", args->preset,
                  "NAME: a model's attention stack from models/NAME.json (`sparseattn models` "
                  "lists them): FLOPs and KV-cache bytes per layer and in total vs all-dense");
  args->layer_flag = cmd->add_option("--layer", args->layer,
                                     "L: with --preset, only layer L (counted from 0)");
  args->cmd = cmd;
  cmd->callback([args] { run_info_command(*args); });
}

}  // namespace sparseattn::cli
