// sparseattn reach — how information flows through a stack of sparse attention layers
// (contract §6; docs/information-flow.md defines every number printed).
//
//   sparseattn reach --seq-len N|A:B|A,B,C [--plot DIR] [--layers L] [--num-heads H] [pattern flags]
//                    [--layer-spec layers.json] [--level auto|token|block]
//                    [--token I] [--from I --to J] [--json]
//   sparseattn reach --preset NAME --seq-len N|A:B|A,B,C [--json]   (a model's stack from
//                    models/; cli/presets.h, docs/models.md)
//
// Every layer uses the pattern flags, unless --layer-spec gives one pattern per layer:
//   {"layers": [{"pattern": "window", "window": 1},
//               {"pattern": "window", "window": 2},
//               {"heads": [{"pattern": "window", "window": 2, "dilation": 3},
//                          {"pattern": "window", "window": 1}]}]}
// (or --pattern-file with the same {"layers": [...]} object; api/pattern_file.h). Keys are
// the pattern flags' names without "--" ("num_random_blocks" or "num-random-blocks");
// "heads" (or a plain list inside "layers") gives one pattern per head (the layer's edges
// are their union); .npy paths are relative to the JSON file's folder. With fewer entries than --layers the last one repeats; past the stack the last
// layer repeats until nothing changes (the saturation depth). A --seq-len sweep prints
// mixing depth, diameter, mean shortest path and spectral gap per n.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/figures.h"
#include "cli/presets.h"
#include "api/inputs.h"
#include "api/results.h"
#include "api/pattern_file.h"
#include "api/reach_text.h"
#include "api/seq_range.h"
#include "core/error.h"
#include "graph/measures.h"
#include "graph/reach.h"
#include "graph/rollout.h"
#include "graph/spectral.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct ReachArgs {
  SizeFlags sizes;
  PatternFlags pattern;
  int64_t layers = 0;  // 0: 1, or the number of entries in --layer-spec
  std::string layer_spec;
  std::string level = "auto";
  int64_t token = -1;
  int64_t from = -1, to = -1;
  CLI::Option* from_flag = nullptr;
  CLI::Option* to_flag = nullptr;
  CLI::Option* token_flag = nullptr;   // given at all? (-1 / 0 above mean "not given")
  CLI::Option* layers_flag = nullptr;
  bool json = false;
  std::string plot;  // --plot DIR (sweeps)
  std::string preset;  // --preset NAME (cli/presets.h): a model's stack from models/
  CLI::App* cmd = nullptr;
};

// The stack for one seq_len: the pattern flags (or a one-pattern --pattern-file) on every
// layer, or one pattern per layer from --layer-spec / a {"layers": [...]} --pattern-file.
graph::LayerStack build_stack(const ReachArgs& a, const SizeFlags& size_flags) {
  require(a.layers >= 1 || !a.layers_flag->count(), "--layers", a.layers,
          "must be an integer >= 1");
  require(a.layer_spec.empty() || a.pattern.pattern_file.empty(), "--layer-spec", a.layer_spec,
          "give --layer-spec or --pattern-file, not both");
  nlohmann::json entries = nlohmann::json::array();
  std::string flag, path;
  if (!a.layer_spec.empty()) {
    flag = "--layer-spec", path = a.layer_spec;
    const nlohmann::json doc = read_json_file(flag, path);
    entries = doc.is_object() && doc.contains("layers") ? doc.at("layers") : doc;
    require(entries.is_array() && !entries.empty(), flag, path,
            "must hold a non-empty list of layers ({\"layers\": [...]} or [...])");
  } else if (!a.pattern.pattern_file.empty()) {
    flag = "--pattern-file", path = a.pattern.pattern_file;
    entries = read_layer_entries(flag, path);
  }
  PatternFlags sizing = a.pattern;
  if (!entries.empty()) sizing.pattern_file.clear();  // a per-layer file fixes no head count
  PatternSizes sizes = to_sizes(size_flags, sizing);
  graph::LayerStack stack;
  if (entries.empty()) {
    const int64_t layers = a.layers == 0 ? 1 : a.layers;
    return graph::uniform_stack(std::make_shared<const Pattern>(build_pattern(a.pattern, sizes)),
                                layers);
  }
  const int64_t layers = a.layers == 0 ? static_cast<int64_t>(entries.size()) : a.layers;
  // Identical entries share one Pattern: the engines then treat them as one repeated layer.
  std::map<std::string, std::shared_ptr<const Pattern>> built;
  for (int64_t l = 0; l < layers; ++l) {
    const size_t e = std::min<size_t>(static_cast<size_t>(l), entries.size() - 1);
    const std::string key = entries[e].dump();
    auto it = built.find(key);
    if (it == built.end()) {
      const FilePattern fp = pattern_from_json(
          entries[e], flag + " " + path + ": layers[" + std::to_string(e) + "]", folder_of(path));
      PatternSizes z = sizes;
      if (fp.num_heads > 0) z.num_heads = fp.num_heads;
      it = built.emplace(key, std::make_shared<const Pattern>(materialize(fp.spec, z))).first;
    }
    stack.layers.push_back(it->second);
  }
  return stack;
}

std::string text_or(const std::optional<int64_t>& v, const char* none) {
  return v ? std::to_string(*v) : none;
}

void run_reach_one(const ReachArgs& a, const SizeFlags& size_flags) {
  const auto t0 = std::chrono::steady_clock::now();
  const graph::LayerStack stack = build_stack(a, size_flags);
  const int64_t n = stack.seq_len();
  require(!a.token_flag->count() || (a.token >= 0 && a.token < n), "--token", a.token,
          "must be in [0, " + std::to_string(n) + ")");
  require(bool(a.from_flag->count()) == bool(a.to_flag->count()), "--from/--to",
          a.from_flag->count() ? "--from only" : "--to only", "give both or neither");
  graph::LevelChoice choice = graph::LevelChoice::automatic;
  if (a.level == "token") choice = graph::LevelChoice::token;
  else if (a.level == "block") choice = graph::LevelChoice::block;
  else require(a.level == "auto", "--level", a.level, "must be auto, token or block");

  ReachRequest request;
  request.token = a.token;
  request.level = choice;
  if (a.from_flag->count()) request.path = std::make_pair(a.from, a.to);
  const ReachResult r = compute_reach(stack, request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.json)
    std::cout << reach_json(r, request).dump(2) << "\n";
  else
    std::cout << reach_text(r, request, stack, seconds);  // api/reach_text.h
}

// `--seq-len A:B`: mixing depth, diameter, mean shortest path and spectral gap per n, as a
// table or a JSON array; with --plot DIR the figure reach_vs_seq_len.{png,svg}.
void run_reach_sweep(const ReachArgs& a, const std::vector<int64_t>& seq_lens) {
  require(!a.token_flag->count(), "--token", a.token, "applies to one --seq-len, not a sweep");
  require(!a.from_flag->count() && !a.to_flag->count(), "--from/--to", "given",
          "apply to one --seq-len, not a sweep");
  require(!a.sizes.seq_len_k_flag->count(), "--seq-len-k", a.sizes.seq_len_k,
          "the graph view is self-attention; leave it out");
  graph::LevelChoice choice = graph::LevelChoice::automatic;
  if (a.level == "token") choice = graph::LevelChoice::token;
  else if (a.level == "block") choice = graph::LevelChoice::block;
  else require(a.level == "auto", "--level", a.level, "must be auto, token or block");
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json)
    std::cout << fmt::format("{:>8}  {:>6}  {:>12}  {:>9}  {:>10}  {:>12}  {:>8}\n", "seq_len", "level",
                             "mixing depth", "diameter", "mean path", "spectral gap", "time s");
  for (const int64_t n : seq_lens) {
    const auto t0 = std::chrono::steady_clock::now();
    SizeFlags sf = a.sizes;
    sf.seq_len = n;
    const graph::LayerStack stack = build_stack(a, sf);
    const graph::ReachSummary s = graph::g1_reach_bitset(stack, -1, choice);
    const auto depth = graph::mixing_depth(s);
    const auto diam = graph::diameter(s);
    const auto mean = graph::mean_shortest_path(s);
    std::optional<graph::SpectralGap> gap;
    try {
      gap = graph::spectral_gap(stack.layer(0));
    } catch (const RuntimeError&) {
      // reported unknown (null), as for one seq_len
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto js = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    rows.push_back({{"seq_len", n},
                    {"layers", stack.num_layers()},
                    {"level", graph::level_name(s.level)},
                    {"mixing_depth", js(depth)},
                    {"diameter", js(diam)},
                    {"mean_shortest_path", js(mean)},
                    {"spectral_gap", gap ? nlohmann::json(gap->gap) : nlohmann::json(nullptr)},
                    {"seconds", seconds}});
    if (!a.json)
      std::cout << fmt::format("{:>8}  {:>6}  {:>12}  {:>9}  {:>10}  {:>12}  {:>8.2f}\n", n,
                               graph::level_name(s.level), text_or(depth, "never"),
                               text_or(diam, "none"), mean ? fmt::format("{:.3f}", *mean) : "none",
                               gap ? fmt::format("{:.4g}", gap->gap) : "unknown", seconds)
                << std::flush;
  }
  if (a.json) std::cout << rows.dump(2) << "\n";
  if (a.plot.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(a.plot, ec);
  require(!ec && std::filesystem::is_directory(a.plot), "--plot", a.plot,
          "must be a directory that can be created");
  std::string why;
  if (!gnuplot_available(&why)) {
    std::cout << "note: " << why << "\n";
    return;
  }
  write_figure(a.plot, "reach_vs_seq_len", [&](Gnuplot& gp) {
    std::vector<std::pair<double, double>> depth, diam, gap;
    for (const auto& r : rows) {
      const double n = r["seq_len"].get<double>();
      if (!r["mixing_depth"].is_null()) depth.emplace_back(n, r["mixing_depth"].get<double>());
      if (!r["diameter"].is_null()) diam.emplace_back(n, r["diameter"].get<double>());
      if (!r["spectral_gap"].is_null()) gap.emplace_back(n, r["spectral_gap"].get<double>());
    }
    gp << "set title 'Information flow vs seq_len (contract 6)' noenhanced\n"
       << "set logscale x 2\nset logscale y 2\nset xlabel 'seq_len' noenhanced\n"
       << "set ylabel 'layers (mixing depth) / hops (diameter)'\n"
       << "set logscale y2 10\nset y2label 'spectral gap 1 - |lambda_2|'\nset y2tics\n";
    plot_lines(gp, {{"mixing depth", depth}, {"diameter", diam}, {"spectral gap (right axis)", gap}},
               {"", "", "linespoints lw 2 pt 5 axes x1y2"});
  });
  std::cout << "wrote " << a.plot << "/reach_vs_seq_len.{png,svg}\n";
}

void run_reach(const ReachArgs& a) {
  if (!a.preset.empty()) {
    std::vector<std::string> fixed = pattern_flag_names();
    for (const char* f : {"--layer-spec", "--layers", "--num-heads", "--seq-len-k", "--token",
                          "--from", "--to", "--level", "--plot"})
      fixed.push_back(f);
    refuse_overridden_flags(a.cmd, a.preset, fixed);
    return run_reach_preset(a.preset, a.sizes.seq_len_text, a.json);
  }
  const std::vector<int64_t> seq_lens = parse_seq_lens("--seq-len", a.sizes.seq_len_text);
  if (is_seq_len_sweep(a.sizes.seq_len_text)) return run_reach_sweep(a, seq_lens);
  require(a.plot.empty(), "--plot", a.plot, "draws a --seq-len sweep (A:B or A,B,C)");
  SizeFlags sf = a.sizes;
  sf.seq_len = seq_lens.front();
  run_reach_one(a, sf);
}

}  // namespace

void register_reach(CLI::App& app) {
  auto a = std::make_shared<ReachArgs>();
  CLI::App* cmd = app.add_subcommand(
      "reach", "information flow across layers: connected fraction, mixing depth, receptive "
               "field, hop distances, shortest path, spectral gap, rollout (contract §6)");
  add_size_flags(cmd, a->sizes, /*allow_range=*/true);
  a->layers_flag = cmd->add_option("--layers", a->layers,
                  "L: layers in the stack, integer >= 1 (default 1, or the entries of "
                  "--layer-spec); measures continue past it with the last layer repeated");
  cmd->add_option("--layer-spec", a->layer_spec,
                  "FILE.json: one pattern per layer, {\"layers\": [{flags}, {\"heads\": "
                  "[{flags}, ...]}, ...]}; replaces the pattern flags");
  cmd->add_option("--level", a->level,
                  "auto|token|block: graph to analyse; auto = block when every tile is full")
      ->capture_default_str();
  a->token_flag = cmd->add_option("--token", a->token, "I: report the receptive field of token I, in [0, seq_len)");
  a->from_flag = cmd->add_option("--from", a->from, "I: shortest path from token I (with --to)");
  a->to_flag = cmd->add_option("--to", a->to, "J: shortest path to token J (with --from)");
  cmd->add_flag("--json", a->json, "print JSON instead of the table (an array for a --seq-len sweep)");
  cmd->add_option("--plot", a->plot,
                  "DIR: with a --seq-len sweep, draw mixing depth, diameter and spectral gap vs "
                  "seq_len into DIR/reach_vs_seq_len.{png,svg}");
  add_pattern_flags(cmd, a->pattern);
  cmd->add_option("--preset", a->preset,
                  "NAME: a model's attention stack from models/NAME.json (`sparseattn models` "
                  "lists them); replaces the pattern flags, --layers and --layer-spec");
  a->cmd = cmd;
  cmd->callback([a] { run_reach(*a); });
}

}  // namespace sparseattn::cli
