// Model presets (contract §6.4): a real model's attention stack as a JSON file in models/
// (docs/models.md lists them, their sources and every off-by-one decision).
//
//   {"name": "gpt-oss-20b", "model": "openai/gpt-oss-20b", "source": "...",
//    "fields": {config field: value as published}, "causal": true, "num_layers": 24,
//    "num_heads": 64, "num_kv_heads": 8, "head_dim": 64, "scale": 0.125, "softcap": null,
//    "sinks": true, "kv_bytes_per_value": 2,
//    "schedule": ["sliding", "full"],               (repeated from layer 0, cut at num_layers)
//    "layer_types": {"sliding": {"pattern": {pattern-file entry}}, ...,
//                    "blocksparse": {"pattern": null, "missing_kind": "block-sparse ..."}},
//    "decisions": [...], "not_modelled": [...]}
//
// A layer type whose "pattern" is null needs a pattern kind this project does not have yet
// ("missing_kind"); commands that need its pattern refuse, naming that kind.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/pattern_flags.h"
#include "core/tensor.h"

namespace sparseattn::api {

struct PresetLayerType {
  nlohmann::json pattern;     // a pattern-file entry (api/pattern_file.h), or null
  std::string missing_kind;   // when pattern is null: the kind it needs
  bool seed_per_layer = false;  // random kinds: seed = layer index (each layer draws its own)
};

struct ModelPreset {
  std::string name, model, source, file;
  bool causal = true;
  int64_t num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t kv_bytes_per_value = 2;  // bytes per cached key or value element (bfloat16)
  double scale = 0;
  std::optional<double> softcap;
  bool sinks = false;
  std::vector<std::string> schedule;  // one period of layer-type names
  std::map<std::string, PresetLayerType> layer_types;

  // The type of layer `layer` (0-based): schedule[layer % period].
  const std::string& type_of(int64_t layer) const;
  // The schedule in one line, e.g. "(local x5, global) x8" or "(global, local x2) x7 + global".
  std::string schedule_line() const;
  // The pattern-file entry of layer `layer` (seed set where seed_per_layer). Throws
  // InvalidArgument("--preset", name, "layer L (type) needs the <kind> pattern kind, ...")
  // when its type has no pattern yet.
  nlohmann::json layer_entry(int64_t layer) const;
  // Throws InvalidArgument("--layer", layer, "must be in [0, num_layers) for <name>").
  void check_layer(int64_t layer) const;
};

// The presets' folder: $SPARSEATTN_MODELS_DIR, else the source tree's models/.
std::string models_dir();
// File names without ".json", sorted.
std::vector<std::string> preset_names();
// Reads models/<name>.json. Throws InvalidArgument("--preset", name, "must be one of: ...")
// for an unknown name, and InvalidArgument("--preset", file, "<field>: ...") for a malformed
// file.
ModelPreset load_preset(const std::string& name);

// What `attend`, `check` and `mask` take from one layer of a preset (`--preset NAME --layer
// L`, Python preset=, layer=; contract §6.4): the layer's pattern as the pattern flags that
// write it (so the call is the same as with those flags), the softmax scale and softcap, and
// whether the model has sinks (their values are weights: the caller supplies them).
struct PresetLayerCall {
  std::string type;         // the layer's type name
  nlohmann::json entry;     // its pattern-file entry
  PatternFlags pattern;     // the same entry as pattern flags (flags_from_json)
  double scale = 0;
  std::optional<double> softcap;
  bool sinks = false;
};
// Throws as layer_entry() (a layer out of range, a type whose kind is missing).
PresetLayerCall preset_layer_call(const ModelPreset& preset, int64_t layer);

// q's heads must be the preset's num_heads, k's and v's its num_kv_heads, q's and k's last
// dimension its head_dim. Shapes as the files or arrays give them (rank 2 to 4, leading 1s
// omitted); bshd: [batch, seq_len, heads, d]. Throws InvalidArgument("--q heads", ...),
// ("--k heads"), ("--v heads"), ("--q head_dim"), ("--k head_dim") naming the preset's value.
void check_preset_inputs(const ModelPreset& preset, const Shape& q, const Shape& k,
                         const Shape& v, bool bshd);

}  // namespace sparseattn::api
