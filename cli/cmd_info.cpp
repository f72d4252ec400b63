// sparseattn info — what a pattern costs, before running anything.
//
//   sparseattn info --seq-len N [--seq-len-k M] [--num-heads H] [--head-dim D] [--json]
//                   [pattern flags]
//
// Everything is read off the materialized pattern (pattern_stats, attention_flops): nnz,
// density, keys per query row, tiles of the canonical layout, the random draws that
// could not be made, and FLOPs (4 * nnz * head_dim per batch element, the FlashAttention
// paper's count) against dense attention's 4 * H * N * M * head_dim. Parameters beyond the
// sequence are shown as materialize() canonicalized them, each change on a "clamped" line.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/error.h"

namespace sparseattn::cli {

namespace {

struct InfoArgs {
  SizeFlags sizes;
  int64_t head_dim = 64;
  bool json = false;
  PatternFlags pattern;
};

void run_info(const InfoArgs& a) {
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
    nlohmann::json j = {
        {"pattern", describe(pattern.spec)},
        {"num_heads", sizes.num_heads},
        {"seq_len_q", sizes.seq_len_q},
        {"seq_len_k", sizes.seq_len_k},
        {"head_dim", a.head_dim},
        {"nnz", st.nnz},
        {"dense_pairs", st.dense_pairs},
        {"density", st.density},
        {"keys_per_row", {{"min", st.row_min}, {"mean", st.row_mean}, {"max", st.row_max}}},
        {"empty_rows", st.empty_rows},
        {"tiles", {{"listed", st.num_tiles}, {"full", st.full_tiles},
                   {"partial", st.num_tiles - st.full_tiles}}},
        {"random_draws", random_draws},
        {"random_shortfall", pattern.random_shortfall},
        {"flops", flops},
        {"dense_flops", dense_flops},
        {"flops_fraction", dense_flops > 0 ? flops / dense_flops : 0.0},
        {"clamped", pattern.clamped},
    };
    std::cout << j.dump(2) << "\n";
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
}

}  // namespace

void register_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "info", "a pattern's nnz, density, keys per row, tiles and FLOPs versus dense");
  add_size_flags(cmd, args->sizes);
  cmd->add_option("--head-dim", args->head_dim, "D: head dimension for the FLOP count, integer >= 1")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object instead of the table");
  add_pattern_flags(cmd, args->pattern);
  cmd->callback([args] { run_info(*args); });
}

}  // namespace sparseattn::cli
