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
// The numbers and both renderings (text, --json) are api/info_result.h's.
//
//   sparseattn info --cu-seqlens-q Q.npy --cu-seqlens-k K.npy [--num-heads H] [--head-dim D]
//                   [--json] [pattern flags]            (a packed batch, contract §2.10)
//   sparseattn info --cache-seqlens S.npy --seq-len L_q [--num-heads H] [--head-dim D]
//                   [--json] [pattern flags]            (a filled KV cache, contract §2.11)
//
// Under a layout the counts are summed over the sequences, each one's pattern built for its
// own lengths, with a line per sequence (api/layout_info.h); a packed batch also gives the
// pairs an explicit block-diagonal mask of the same batch would span. --block-table is
// refused (by layout_info, for Python too): paging moves keys, never changes a count.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "api/info_result.h"
#include "api/layout_flags.h"
#include "api/layout_info.h"
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
  LayoutFlags layout;  // --cu-seqlens-q/-k, --cache-seqlens (contract §2.10-§2.11)
  std::string preset;  // --preset NAME (cli/presets.h), with --layer L
  int64_t layer = 0;
  CLI::Option* layer_flag = nullptr;
  CLI::App* cmd = nullptr;
};

// One length: the table, or one JSON object (appended to `rows` when given, else printed).
void run_info(const InfoArgs& a, nlohmann::json* rows = nullptr) {
  require(a.head_dim >= 1, "--head-dim", a.head_dim, "must be an integer >= 1");
  const PatternSizes sizes = to_sizes(a.sizes, a.pattern);
  const InfoResult r = info_result(build_pattern(a.pattern, sizes), a.head_dim);
  if (!a.json) {
    std::cout << info_text(r);
    return;
  }
  const nlohmann::json j = info_json(r);  // tile_cost's fields included
  if (rows) rows->push_back(j);
  else std::cout << j.dump(2) << "\n";
}

// A packed batch or a filled cache (api/layout_info.h).
void run_info_layout(const InfoArgs& a) {
  require(a.preset.empty(), "--preset", a.preset,
          "must not be given with a sequence layout (a preset fixes its own lengths)");
  require(!a.layer_flag->count(), "--layer", a.layer, "selects a layer of a --preset; give --preset");
  require(!a.sizes.seq_len_k_flag->count(), "--seq-len-k", a.sizes.seq_len_k,
          "must not be given with a sequence layout: the layout gives each sequence's keys");
  const SeqLayout layout = read_layout(a.layout);
  int64_t seq_len_q = 0;
  if (layout.varlen) {
    require(a.sizes.seq_len_text.empty(), "--seq-len", a.sizes.seq_len_text,
            "must not be given with --cu-seqlens-q/-k: the lists give each sequence's lengths");
  } else {
    require(!a.sizes.seq_len_text.empty() && !is_seq_len_sweep(a.sizes.seq_len_text), "--seq-len",
            a.sizes.seq_len_text.empty() ? "missing" : a.sizes.seq_len_text,
            "must be one length L_q >= 1 (the queries of each element) with --cache-seqlens");
    seq_len_q = parse_seq_lens("--seq-len", a.sizes.seq_len_text).front();
  }
  const LayoutInfo r =
      layout_info(to_spec(a.pattern), a.sizes.num_heads, a.head_dim, layout, seq_len_q);
  if (a.json) std::cout << layout_info_json(r).dump(2) << "\n";
  else std::cout << layout_info_text(r);
}

// --seq-len N, or a sweep (A:B, A,B,C): one table row, or with --json one object of a JSON
// array, per n.
void run_info_command(const InfoArgs& a) {
  if (a.layout.requested()) return run_info_layout(a);
  require(!a.sizes.seq_len_text.empty(), "--seq-len", "missing",
          "is required: N >= 1, a sweep A:B or A,B,C (or give --cu-seqlens-q/-k or --cache-seqlens)");
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
  add_size_flags(cmd, args->sizes, /*allow_range=*/true, /*seq_len_required=*/false);
  cmd->add_option("--head-dim", args->head_dim, "D: head dimension for the FLOP count, integer >= 1")
      ->capture_default_str();
  cmd->add_flag("--json", args->json,
                "print one JSON object instead of the table (a JSON array, one object per n, for "
                "a --seq-len sweep)");
  add_pattern_flags(cmd, args->pattern);
  add_layout_flags(cmd, args->layout);
  cmd->add_option("--preset", args->preset,
                  "NAME: a model's attention stack from models/NAME.json (`sparseattn models` "
                  "lists them): FLOPs and KV-cache bytes per layer and in total vs all-dense");
  args->layer_flag = cmd->add_option("--layer", args->layer,
                                     "L: with --preset, only layer L (counted from 0)");
  args->cmd = cmd;
  cmd->callback([args] { run_info_command(*args); });
}

}  // namespace sparseattn::cli
