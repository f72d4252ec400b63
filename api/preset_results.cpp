// The numbers of `reach --preset` and `info --preset` (api/preset_results.h).
#include "api/preset_results.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/pattern_file.h"
#include "api/results.h"
#include "graph/band_reach.h"
#include "graph/measures.h"
#include "graph/reach.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

namespace {

// One layer of a preset at one seq_len: its spec, and its band when it is one.
struct PresetLayer {
  std::string type;
  PatternSpec spec;
  std::optional<graph::Band> band;
  std::optional<graph::IntervalLayer> interval;  // a band or a chunked layer
};

std::vector<PresetLayer> preset_layers(const ModelPreset& p, int64_t n) {
  std::vector<PresetLayer> out;
  for (int64_t l = 0; l < p.num_layers; ++l) {
    const nlohmann::json entry = p.layer_entry(l);  // throws for a missing kind
    const FilePattern fp = pattern_from_json(
        entry, "--preset " + p.name + ": layer " + std::to_string(l), models_dir());
    out.push_back({p.type_of(l), fp.spec, graph::band_of(fp.spec, n),
                   graph::interval_layer_of(fp.spec, n)});
  }
  return out;
}

PatternSizes one_head(int64_t n) {
  PatternSizes z;
  z.num_heads = 1;
  z.seq_len_q = z.seq_len_k = n;
  return z;
}

nlohmann::json opt_json(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json preset_reach_json(const ModelPreset& p, int64_t n) {
  const std::vector<PresetLayer> layers = preset_layers(p, n);
  bool all_bands = true, all_intervals = true;
  for (const PresetLayer& l : layers) {
    all_bands = all_bands && l.band.has_value();
    all_intervals = all_intervals && l.interval.has_value();
  }
  graph::ReachSummary s;
  std::optional<int64_t> first;
  std::string engine;
  if (all_bands) {
    std::vector<graph::Band> bands;
    for (const PresetLayer& l : layers) bands.push_back(*l.band);
    s = graph::g2_reach_band(bands, n, n - 1);
    first = graph::band_first_reach(bands, n);
    engine = "band (closed form, exact)";
  } else if (all_intervals) {
    // Bands and chunked layers: per source token one interval, layer by layer (exact).
    std::vector<graph::IntervalLayer> ys;
    for (const PresetLayer& l : layers) ys.push_back(*l.interval);
    s = graph::g2_reach_interval(ys, n, n - 1, &first);
    engine = "interval (bands and chunks, exact)";
  } else {
    graph::LayerStack stack;
    std::map<std::string, std::shared_ptr<const Pattern>> built;  // identical layers share one
    for (const PresetLayer& l : layers) {
      const std::string key = describe(l.spec);
      auto it = built.find(key);
      if (it == built.end())
        it = built.emplace(key, std::make_shared<const Pattern>(materialize(l.spec, one_head(n)))).first;
      stack.layers.push_back(it->second);
    }
    s = graph::g1_reach_bitset(stack, n - 1);
    const std::vector<int64_t> path = graph::shortest_path(stack, 0, n - 1);
    if (!path.empty()) first = static_cast<int64_t>(path.size()) - 1;
    engine = std::string("bitset, level ") + graph::level_name(s.level) + " (exact)";
  }
  const std::vector<double> fraction = graph::connected_fraction(s);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t l = 0; l < p.num_layers; ++l) {
    const size_t i = static_cast<size_t>(std::min<int64_t>(l, static_cast<int64_t>(fraction.size()) - 1));
    rows.push_back({{"layer", l + 1},
                    {"type", layers[static_cast<size_t>(l)].type},
                    {"pattern", describe(layers[static_cast<size_t>(l)].spec)},
                    {"connected_fraction", fraction.empty() ? 1.0 : fraction[i]},
                    {"last_query_coverage", s.coverage[static_cast<size_t>(l)]},
                    {"reaches_token_0", s.span[static_cast<size_t>(l)] == n - 1}});
  }
  const auto mean = graph::mean_shortest_path(s);
  return {{"preset", p.name},
          {"model", p.model},
          {"seq_len", n},
          {"num_layers", p.num_layers},
          {"engine", engine},
          {"layers", rows},
          {"first_reach_depth", opt_json(first)},
          {"first_reach_within_stack", first.has_value() && *first <= p.num_layers},
          {"mixing_depth", opt_json(graph::mixing_depth(s))},
          {"diameter", opt_json(graph::diameter(s))},
          {"mean_shortest_path", mean ? nlohmann::json(*mean) : nlohmann::json(nullptr)},
          {"never_connected", s.never},
          {"connected_fraction", fraction},
          {"hops", s.hops}};
}

nlohmann::json preset_info_json(const ModelPreset& p, int64_t n, int64_t only_layer) {
  if (only_layer >= 0) p.check_layer(only_layer);
  const std::vector<PresetLayer> layers = preset_layers(p, n);
  const double dense_pairs = p.causal ? 0.5 * static_cast<double>(n) * static_cast<double>(n + 1)
                                      : static_cast<double>(n) * static_cast<double>(n);
  const double per_pair = 4.0 * static_cast<double>(p.head_dim * p.num_heads);
  const double kv_per_token =
      2.0 * static_cast<double>(p.num_kv_heads * p.head_dim * p.kv_bytes_per_value);
  std::map<std::string, int64_t> nnz_of;  // identical layers are counted once
  nlohmann::json rows = nlohmann::json::array();
  double flops = 0, dense_flops = 0, kv = 0, dense_kv = 0;
  for (int64_t l = 0; l < p.num_layers; ++l) {
    if (only_layer >= 0 && l != only_layer) continue;
    const PresetLayer& layer = layers[static_cast<size_t>(l)];
    int64_t nnz = 0;
    if (layer.interval) {
      nnz = graph::interval_nnz(*layer.interval, n);
    } else {
      const std::string key = describe(layer.spec);
      auto it = nnz_of.find(key);
      if (it == nnz_of.end())
        it = nnz_of.emplace(key, pattern_stats(materialize(layer.spec, one_head(n))).nnz).first;
      nnz = it->second;
    }
    const double f = per_pair * static_cast<double>(nnz), df = per_pair * dense_pairs;
    nlohmann::json row = {{"layer", l},
                          {"type", layer.type},
                          {"pattern", describe(layer.spec)},
                          {"keys_per_query", static_cast<double>(nnz) / static_cast<double>(n)},
                          {"flops", f},
                          {"dense_flops", df}};
    flops += f;
    dense_flops += df;
    if (p.causal) {
      // A decoder keeps, per layer, the keys a future query can still attend: a causal
      // window of width w keeps w + 1 tokens, a causal chunked layer its chunk (at most C
      // tokens), any other layer all n.
      int64_t kept = n;
      if (layer.band && layer.band->right == 0) kept = std::min(n, layer.band->left + 1);
      else if (layer.interval && layer.interval->chunk_size > 0 && layer.interval->causal)
        kept = std::min(n, layer.interval->chunk_size);
      row["kv_cache_tokens"] = kept;
      row["kv_cache_bytes"] = kv_per_token * static_cast<double>(kept);
      kv += kv_per_token * static_cast<double>(kept);
      dense_kv += kv_per_token * static_cast<double>(n);
    } else {
      row["kv_cache_tokens"] = nullptr;
      row["kv_cache_bytes"] = nullptr;
    }
    rows.push_back(row);
  }
  nlohmann::json total = {{"flops", flops},
                          {"dense_flops", dense_flops},
                          {"speedup_bound", flops > 0 ? dense_flops / flops : 0.0}};
  if (p.causal) {
    total["kv_cache_bytes"] = kv;
    total["dense_kv_cache_bytes"] = dense_kv;
    total["kv_cache_fraction"] = dense_kv > 0 ? kv / dense_kv : 0.0;
  } else {
    total["kv_cache_bytes"] = nullptr;  // an encoder keeps no cache
  }
  return {{"preset", p.name}, {"model", p.model}, {"seq_len", n}, {"num_heads", p.num_heads},
          {"num_kv_heads", p.num_kv_heads}, {"head_dim", p.head_dim},
          {"kv_bytes_per_value", p.kv_bytes_per_value}, {"layers", rows}, {"total", total}};
}

}  // namespace sparseattn::api
