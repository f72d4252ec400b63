// `reach --preset`, `info --preset` and `sparseattn models` (cli/presets.h).
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/model_presets.h"
#include "api/pattern_file.h"
#include "api/preset_results.h"
#include "api/seq_range.h"
#include "cli/presets.h"
#include "core/error.h"
#include "core/npy.h"
#include "graph/band_reach.h"
#include "graph/measures.h"
#include "graph/reach.h"
#include "pattern/pattern.h"

namespace sparseattn::cli {

using namespace api;

namespace {

void print_reach(const nlohmann::json& r) {
  const int64_t n = r["seq_len"].get<int64_t>(), L = r["num_layers"].get<int64_t>();
  std::cout << fmt::format("reach         preset {} ({}), seq_len {}, {} layers, engine {}\n",
                           r["preset"].get<std::string>(), r["model"].get<std::string>(), n, L,
                           r["engine"].get<std::string>());
  std::cout << fmt::format("\n{:>6}  {:<10} {:<40} {:>18}  {:>16}\n", "layer", "type", "pattern",
                           "connected fraction", fmt::format("cover({})", n - 1));
  for (const auto& row : r["layers"])
    std::cout << fmt::format("{:>6}  {:<10} {:<40} {:>18.6f}  {:>16}{}\n", row["layer"].get<int64_t>(),
                             row["type"].get<std::string>(), row["pattern"].get<std::string>(),
                             row["connected_fraction"].get<double>(),
                             row["last_query_coverage"].get<int64_t>(),
                             row["reaches_token_0"].get<bool>() ? "  reaches token 0" : "");
  const auto text = [](const nlohmann::json& v, const char* none) {
    return v.is_null() ? std::string(none) : v.dump();
  };
  std::string first = "never";
  if (!r["first_reach_depth"].is_null())
    first = fmt::format("{} ({})", r["first_reach_depth"].get<int64_t>(),
                        r["first_reach_within_stack"].get<bool>()
                            ? "layers counted from 1"
                            : "beyond the stack: its last layer repeated");
  const auto& hops = r["hops"];
  std::cout << fmt::format("\nlast query {} first reaches token 0 after layer {}\n", n - 1, first)
            << fmt::format("mixing depth        {}\n", text(r["mixing_depth"], "never (some pairs never connect)"))
            << fmt::format("diameter            {}\n", text(r["diameter"], "none (disconnected)"))
            << fmt::format("mean shortest path  {}\n",
                           r["mean_shortest_path"].is_null()
                               ? std::string("none")
                               : fmt::format("{:.4f} hops (connected pairs, i != j)",
                                             r["mean_shortest_path"].get<double>()))
            << fmt::format("never connected     {} of {} ordered pairs\n",
                           r["never_connected"].get<int64_t>(), n * n)
            << "hop distances       ";
  for (size_t d = 0; d < hops.size(); ++d) {
    if (hops.size() > 24 && d >= 12 && d + 12 < hops.size()) {
      if (d == 12) std::cout << "... ";
      continue;
    }
    std::cout << fmt::format("{}:{} ", d, hops[d].get<int64_t>());
  }
  std::cout << "\n";
}

}  // namespace

const std::vector<std::string>& pattern_flag_names() {
  static const std::vector<std::string> names = {
      "--pattern",   "--window",      "--window-left",       "--window-right",
      "--chunk-size", "--kernel-size", "--dilation",          "--causal",
      "--global",    "--num-random",  "--block-size",        "--num-random-blocks",
      "--num-global-tokens", "--random-table", "--segment-ids", "--mask",
      "--key-padding-mask",  "--seed",         "--pattern-file"};
  return names;
}

void refuse_overridden_flags(const CLI::App* cmd, const std::string& preset,
                             const std::vector<std::string>& flags, const std::string& fixes) {
  for (const std::string& f : flags) {
    const CLI::Option* o = cmd->get_option_no_throw(f);
    if (o && o->count() > 0)
      throw InvalidArgument(f, "given", "--preset " + preset + " fixes " + fixes + "; leave " +
                                            f + " out");
  }
}

void run_reach_preset(const std::string& name, const std::string& seq_len_text, bool json) {
  const ModelPreset p = load_preset(name);
  const std::vector<int64_t> seq_lens = parse_seq_lens("--seq-len", seq_len_text);
  if (!is_seq_len_sweep(seq_len_text)) {
    const nlohmann::json r = preset_reach_json(p, seq_lens.front());
    if (json) std::cout << r.dump(2) << "\n";
    else print_reach(r);
    return;
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::cout << fmt::format("{:>8}  {:>12}  {:>12}  {:>22}  {:>10}\n", "seq_len", "first reach",
                             "mixing depth", "fraction after stack", "mean path");
  for (const int64_t n : seq_lens) {
    nlohmann::json r = preset_reach_json(p, n);
    r.erase("hops");
    const double after = r["layers"].back()["connected_fraction"].get<double>();
    if (!json)
      std::cout << fmt::format("{:>8}  {:>12}  {:>12}  {:>22.6f}  {:>10}\n", n,
                               r["first_reach_depth"].is_null() ? "never" : r["first_reach_depth"].dump(),
                               r["mixing_depth"].is_null() ? "never" : r["mixing_depth"].dump(), after,
                               r["mean_shortest_path"].is_null()
                                   ? std::string("none")
                                   : fmt::format("{:.3f}", r["mean_shortest_path"].get<double>()))
                << std::flush;
    rows.push_back(r);
  }
  if (json) std::cout << rows.dump(2) << "\n";
}

namespace {

void print_info(const nlohmann::json& r) {
  std::cout << fmt::format(
      "info          preset {} ({}), seq_len {}, num_heads {}, num_kv_heads {}, head_dim {}\n",
      r["preset"].get<std::string>(), r["model"].get<std::string>(), r["seq_len"].get<int64_t>(),
      r["num_heads"].get<int64_t>(), r["num_kv_heads"].get<int64_t>(), r["head_dim"].get<int64_t>());
  std::cout << fmt::format("\n{:>5}  {:<10} {:<40} {:>10} {:>12} {:>12} {:>14}\n", "layer", "type",
                           "pattern", "keys/query", "FLOPs", "dense FLOPs", "KV-cache bytes");
  for (const auto& row : r["layers"])
    std::cout << fmt::format("{:>5}  {:<10} {:<40} {:>10.1f} {:>12.4g} {:>12.4g} {:>14}\n",
                             row["layer"].get<int64_t>(), row["type"].get<std::string>(),
                             row["pattern"].get<std::string>(), row["keys_per_query"].get<double>(),
                             row["flops"].get<double>(), row["dense_flops"].get<double>(),
                             row["kv_cache_bytes"].is_null()
                                 ? std::string("n/a")
                                 : fmt::format("{:.4g}", row["kv_cache_bytes"].get<double>()));
  const auto& t = r["total"];
  std::cout << fmt::format("\ntotal FLOPs         {:.4g} per batch element vs all-dense {:.4g}\n",
                           t["flops"].get<double>(), t["dense_flops"].get<double>())
            << fmt::format("speedup bound       {:.3f}x (all-dense FLOPs / preset FLOPs)\n",
                           t["speedup_bound"].get<double>());
  if (t["kv_cache_bytes"].is_null())
    std::cout << "KV cache            n/a (an encoder keeps no KV cache)\n";
  else
    std::cout << fmt::format("KV cache            {:.4g} bytes vs all-dense {:.4g} ({:.4f} of dense; "
                             "{} bytes per value)\n",
                             t["kv_cache_bytes"].get<double>(), t["dense_kv_cache_bytes"].get<double>(),
                             t["kv_cache_fraction"].get<double>(), r["kv_bytes_per_value"].get<int64_t>());
}

}  // namespace

void run_info_preset(const std::string& name, const std::string& seq_len_text,
                     std::optional<int64_t> layer, bool json) {
  const ModelPreset p = load_preset(name);
  if (layer) p.check_layer(*layer);
  const std::vector<int64_t> seq_lens = parse_seq_lens("--seq-len", seq_len_text);
  nlohmann::json rows = nlohmann::json::array();
  for (const int64_t n : seq_lens) {
    const nlohmann::json r = preset_info_json(p, n, layer ? *layer : -1);
    if (json) {
      rows.push_back(r);
    } else {
      print_info(r);
      if (seq_lens.size() > 1) std::cout << "\n";
    }
  }
  if (json) std::cout << (is_seq_len_sweep(seq_len_text) ? rows : rows.front()).dump(2) << "\n";
}

void add_preset_layer_flags(CLI::App* cmd, PresetLayerFlags& f, const std::string& what) {
  f.preset_flag = cmd->add_option("--preset", f.preset,
                                  "NAME: one layer (--layer) of a model's attention stack from "
                                  "models/NAME.json (`sparseattn models` lists them); replaces " +
                                      what);
  f.layer_flag = cmd->add_option("--layer", f.layer,
                                 "L: with --preset, the layer, counted from 0, in [0, num_layers)");
}

bool apply_preset_pattern(const CLI::App* cmd, const PresetLayerFlags& f, PatternFlags& pattern,
                          const std::vector<std::string>& also_fixed, const std::string& fixes) {
  if (f.preset.empty()) {
    require(!f.layer_flag->count(), "--layer", f.layer, "selects a layer of a --preset; give --preset");
    return false;
  }
  std::vector<std::string> fixed;
  for (const std::string& flag : pattern_flag_names())
    if (flag != "--key-padding-mask") fixed.push_back(flag);  // the batch's padding, not the model's
  fixed.insert(fixed.end(), also_fixed.begin(), also_fixed.end());
  refuse_overridden_flags(cmd, f.preset, fixed, fixes);
  const ModelPreset p = load_preset(f.preset);
  require(f.layer_flag->count() > 0, "--layer", "missing",
          "--preset " + p.name + " needs --layer L, in [0, " + std::to_string(p.num_layers) +
              ") (layers are counted from 0)");
  const std::string padding = pattern.key_padding_mask;
  pattern = preset_layer_call(p, f.layer).pattern;
  pattern.key_padding_mask = padding;
  return true;
}

void apply_preset_call(const CLI::App* cmd, const PresetLayerFlags& f, PatternFlags& pattern,
                       std::string& scale, ScoreFlags& score, const std::string& q,
                       const std::string& k, const std::string& v, bool bshd) {
  if (!apply_preset_pattern(cmd, f, pattern,
                            {"--scale", "--softcap", "--alibi-slopes", "--compat", "--global-mask",
                             "--q-global", "--k-global", "--v-global", "--attention-window"},
                            "the layer's pattern, its scale and softcap, and the score pipeline"))
    return;
  const ModelPreset p = load_preset(f.preset);
  const PresetLayerCall c = preset_layer_call(p, f.layer);
  if (c.sinks)
    require(!score.sinks.empty(), "--sinks", "missing",
            p.name + " has learned sinks (one logit per query head, weights not shipped): give "
                     "--sinks S.npy, float [" + std::to_string(p.num_heads) + "]");
  else
    require(score.sinks.empty(), "--sinks", score.sinks,
            p.name + " has no sinks; leave --sinks out");
  check_preset_inputs(p, read_npy_header(q, "--q").shape, read_npy_header(k, "--k").shape,
                      read_npy_header(v, "--v").shape, bshd);
  scale = fmt::format("{:.17g}", c.scale);
  score.softcap = c.softcap ? fmt::format("{:.17g}", *c.softcap) : std::string();
}

void register_models(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "models", "list the model presets (models/*.json) for --preset: name, layers, heads, "
                "schedule, source (contract §6.4, docs/models.md)");
  cmd->add_flag("--json", *json, "print a JSON array instead of the table");
  cmd->callback([json] {
    nlohmann::json rows = nlohmann::json::array();
    if (!*json)
      std::cout << fmt::format("{:<22} {:>6} {:>11} {:>8}  {:<36} {}\n", "name", "layers",
                               "H_q/H_kv", "head_dim", "schedule", "source");
    for (const std::string& name : preset_names()) {
      const ModelPreset p = load_preset(name);
      const std::string source = p.source.substr(0, p.source.find(';'));
      rows.push_back({{"name", p.name}, {"model", p.model}, {"num_layers", p.num_layers},
                      {"num_heads", p.num_heads}, {"num_kv_heads", p.num_kv_heads},
                      {"head_dim", p.head_dim}, {"schedule", p.schedule_line()},
                      {"source", p.source}});
      if (!*json)
        std::cout << fmt::format("{:<22} {:>6} {:>11} {:>8}  {:<36} {}\n", p.name, p.num_layers,
                                 fmt::format("{}/{}", p.num_heads, p.num_kv_heads), p.head_dim,
                                 p.schedule_line(), source);
    }
    if (*json) std::cout << rows.dump(2) << "\n";
  });
}

}  // namespace sparseattn::cli
