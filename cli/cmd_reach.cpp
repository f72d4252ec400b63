// sparseattn reach — how information flows through a stack of sparse attention layers
// (contract §6; docs/information-flow.md defines every number printed).
//
//   sparseattn reach --seq-len N [--layers L] [--num-heads H] [pattern flags]
//                    [--layer-spec layers.json] [--level auto|token|block]
//                    [--token I] [--from I --to J] [--json]
//
// Every layer uses the pattern flags, unless --layer-spec gives one pattern per layer:
//   {"layers": [{"pattern": "window", "window": 1},
//               {"pattern": "window", "window": 2},
//               {"heads": [{"pattern": "window", "window": 2, "dilation": 3},
//                          {"pattern": "window", "window": 1}]}]}
// Keys are the pattern flags' names without "--" ("num-random-blocks" or
// "num_random_blocks"); "heads" gives one pattern per head (the layer's edges are their
// union). With fewer entries than --layers the last one repeats; past the stack the last
// layer repeats until nothing changes (the saturation depth).
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/results.h"
#include "core/error.h"
#include "graph/measures.h"
#include "graph/reach.h"
#include "graph/rollout.h"
#include "graph/spectral.h"

namespace sparseattn::cli {

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
};

// One JSON object of the layer spec -> pattern flags (the same validation as the CLI).
PatternFlags flags_from_json(const nlohmann::json& o, const std::string& where) {
  require(o.is_object(), where, o.dump(), "must be an object of pattern flags");
  PatternFlags f;
  for (const auto& [raw_key, value] : o.items()) {
    std::string key = raw_key;
    for (char& c : key)
      if (c == '_') c = '-';
    const std::string name = where + "." + raw_key;
    try {
      if (key == "pattern") f.pattern = value.get<std::string>();
      else if (key == "window") f.window = value.get<int64_t>();
      else if (key == "dilation") f.dilation = value.get<int64_t>();
      else if (key == "causal") f.causal = value.get<bool>();
      else if (key == "global") {
        if (value.is_array()) {
          for (const auto& g : value)
            f.global += (f.global.empty() ? "" : ",") + std::to_string(g.get<int64_t>());
        } else {
          f.global = value.get<std::string>();
        }
      } else if (key == "num-random") f.num_random = value.get<int64_t>();
      else if (key == "block-size") f.block_size = value.get<int64_t>();
      else if (key == "num-random-blocks") f.num_random_blocks = value.get<int64_t>();
      else if (key == "num-global-tokens") f.num_global_tokens = value.get<int64_t>();
      else if (key == "seed") f.seed = value.get<uint64_t>();
      else if (key == "random-table") f.random_table = value.get<std::string>();
      else if (key == "segment-ids") f.segment_ids = value.get<std::string>();
      else if (key == "mask") f.mask = value.get<std::string>();
      else
        throw InvalidArgument(name, value.dump(),
                              "unknown key; use the pattern flags' names without \"--\"");
    } catch (const nlohmann::json::exception&) {
      throw InvalidArgument(name, value.dump(), "has the wrong type for this flag");
    }
  }
  return f;
}

// The spec of one layer entry and its number of heads.
std::pair<PatternSpec, int64_t> layer_entry(const nlohmann::json& o, const std::string& where,
                                            int64_t num_heads) {
  if (o.is_object() && o.contains("heads")) {
    const nlohmann::json& heads = o.at("heads");
    require(heads.is_array() && !heads.empty() && o.size() == 1, where + ".heads", heads.dump(),
            "must be the only key, a non-empty list of per-head pattern objects");
    PatternSpec s;
    s.kind = PatternKind::per_head;
    for (size_t h = 0; h < heads.size(); ++h)
      s.per_head.push_back(
          to_spec(flags_from_json(heads[h], where + ".heads[" + std::to_string(h) + "]")));
    return {s, static_cast<int64_t>(heads.size())};
  }
  return {to_spec(flags_from_json(o, where)), num_heads};
}

graph::LayerStack build_stack(const ReachArgs& a) {
  require(a.layers >= 1 || !a.layers_flag->count(), "--layers", a.layers,
          "must be an integer >= 1");
  PatternSizes sizes = to_sizes(a.sizes, a.pattern);
  graph::LayerStack stack;
  if (a.layer_spec.empty()) {
    const int64_t layers = a.layers == 0 ? 1 : a.layers;
    return graph::uniform_stack(std::make_shared<const Pattern>(build_pattern(a.pattern, sizes)),
                                layers);
  }
  std::ifstream in(a.layer_spec);
  require(in.good(), "--layer-spec", a.layer_spec, "must be a readable JSON file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("--layer-spec", a.layer_spec, std::string("must be valid JSON: ") + e.what());
  }
  const nlohmann::json entries = doc.is_object() && doc.contains("layers") ? doc.at("layers") : doc;
  require(entries.is_array() && !entries.empty(), "--layer-spec", a.layer_spec,
          "must hold a non-empty list of layers ({\"layers\": [...]} or [...])");
  const int64_t layers = a.layers == 0 ? static_cast<int64_t>(entries.size()) : a.layers;
  // Identical entries share one Pattern: the engines then treat them as one repeated layer.
  std::map<std::string, std::shared_ptr<const Pattern>> built;
  for (int64_t l = 0; l < layers; ++l) {
    const size_t e = std::min<size_t>(static_cast<size_t>(l), entries.size() - 1);
    const std::string key = entries[e].dump();
    auto it = built.find(key);
    if (it == built.end()) {
      auto [spec, heads] = layer_entry(entries[e], "--layer-spec layers[" + std::to_string(e) + "]",
                                       sizes.num_heads);
      PatternSizes z = sizes;
      z.num_heads = heads;
      it = built.emplace(key, std::make_shared<const Pattern>(materialize(spec, z))).first;
    }
    stack.layers.push_back(it->second);
  }
  return stack;
}

std::string text_or(const std::optional<int64_t>& v, const char* none) {
  return v ? std::to_string(*v) : none;
}

void run_reach(const ReachArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const graph::LayerStack stack = build_stack(a);
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
  const graph::ReachSummary& s = r.summary;
  const std::vector<double>& fraction = r.connected_fraction;
  const auto& depth = r.mixing_depth;
  const auto& diam = r.diameter;
  const auto& mean = r.mean_shortest_path;
  const auto& gap = r.gap;
  const std::string& gap_note = r.gap_note;
  const std::vector<int64_t>& path = r.path;
  const std::vector<double>& evenness = r.evenness;
  const bool rollout_ok = r.rollout_ok;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (a.json) {
    std::cout << reach_json(r, request).dump(2) << "\n";
    return;
  }

  std::cout << fmt::format("reach         seq_len {}, {} layer(s), level {}{}\n", n,
                           stack.num_layers(), graph::level_name(s.level),
                           s.level == graph::Level::block
                               ? " (every tile full: exact on the block graph)"
                               : " (exact)");
  for (int64_t first = 0, l = 1; l <= stack.num_layers(); ++l) {
    if (l < stack.num_layers() && stack.same_as_previous(l)) continue;  // a run of equal layers
    std::cout << fmt::format("layers {:<6} {}, {} head(s)\n", fmt::format("{}-{}", first + 1, l),
                             describe(stack.layer(first).spec), stack.layer(first).sizes.num_heads);
    first = l;
  }
  std::cout << fmt::format("\n{:>6}  {:>18}", "layer", "connected fraction");
  if (a.token >= 0)
    std::cout << fmt::format("  {:>10}  {:>8}  {:>16}", fmt::format("cover({})", a.token), "span",
                             "rollout evenness");
  std::cout << "\n";
  const int64_t rows = static_cast<int64_t>(fraction.size());
  for (int64_t L = 1; L <= rows; ++L) {
    // Long saturation tails (a window ring takes n/w layers): the stack, then every
    // power of two, then the last.
    const bool shown = L <= std::max<int64_t>(stack.num_layers(), 16) || (L & (L - 1)) == 0 || L == rows;
    if (!shown) continue;
    std::cout << fmt::format("{:>6}  {:>18.6f}", L, fraction[L - 1]);
    if (a.token >= 0 && L <= stack.num_layers())
      std::cout << fmt::format("  {:>10}  {:>8}  {:>16}", s.coverage[L - 1], s.span[L - 1],
                               rollout_ok ? fmt::format("{:.4f}", evenness[L - 1]) : "n/a");
    std::cout << (L > stack.num_layers() ? "   (last layer repeated)\n" : "\n");
  }
  std::cout << fmt::format("\nmixing depth        {}\n", text_or(depth, "never (some pairs never connect)"))
            << fmt::format("diameter            {}\n", text_or(diam, "none (disconnected)"))
            << fmt::format("mean shortest path  {}\n",
                           mean ? fmt::format("{:.4f} hops (connected pairs, i != j)", *mean) : "none")
            << fmt::format("never connected     {} of {} ordered pairs\n", s.never, n * n)
            << "spectral gap        "
            << (gap ? fmt::format("{:.4g} (layer 1; 1 - |lambda2| = 1 - {:.4g}; {}{})\n", gap->gap,
                                  gap->lambda2_modulus, gap->method,
                                  gap->block_level ? ", block graph" : "")
                    : "unknown (" + gap_note + ")\n");
  std::cout << "hop distances       ";
  for (size_t d = 0; d < s.hops.size(); ++d) {
    if (s.hops.size() > 24 && d >= 12 && d + 12 < s.hops.size()) {
      if (d == 12) std::cout << "... ";
      continue;
    }
    std::cout << fmt::format("{}:{} ", d, s.hops[d]);
  }
  std::cout << "\n";
  if (a.from_flag->count()) {
    std::cout << fmt::format("path {} -> {}      ", a.from, a.to);
    if (path.empty()) std::cout << "none (never connected)";
    for (size_t k = 0; k < path.size(); ++k) std::cout << (k ? " -> " : "") << path[k];
    if (!path.empty()) std::cout << fmt::format("   ({} hop(s))", path.size() - 1);
    std::cout << "\n";
  }
  std::cout << fmt::format("time                {:.2f} s\n", seconds);
}

}  // namespace

void register_reach(CLI::App& app) {
  auto a = std::make_shared<ReachArgs>();
  CLI::App* cmd = app.add_subcommand(
      "reach", "information flow across layers: connected fraction, mixing depth, receptive "
               "field, hop distances, shortest path, spectral gap, rollout (contract §6)");
  add_size_flags(cmd, a->sizes);
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
  cmd->add_flag("--json", a->json, "print JSON instead of the table");
  add_pattern_flags(cmd, a->pattern);
  cmd->callback([a] { run_reach(*a); });
}

}  // namespace sparseattn::cli
