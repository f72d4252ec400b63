// Model presets (model_presets.h): reading models/<name>.json.
#include "api/model_presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "api/pattern_file.h"
#include "core/error.h"

#ifndef SPARSEATTN_MODELS_DIR
#define SPARSEATTN_MODELS_DIR "models"
#endif

namespace sparseattn::api {

namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& file) {
  if (!j.contains(key)) throw InvalidArgument("--preset", file, std::string(key) + ": missing");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InvalidArgument("--preset", file, std::string(key) + ": wrong type");
  }
}

}  // namespace

const std::string& ModelPreset::type_of(int64_t layer) const {
  return schedule[static_cast<size_t>(layer) % schedule.size()];
}

std::string ModelPreset::schedule_line() const {
  // Runs of equal names inside one period: "local x5, global".
  const auto runs = [](const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size();) {
      size_t j = i;
      while (j < names.size() && names[j] == names[i]) ++j;
      if (!out.empty()) out += ", ";
      out += names[i] + (j - i > 1 ? " x" + std::to_string(j - i) : "");
      i = j;
    }
    return out;
  };
  const int64_t period = static_cast<int64_t>(schedule.size());
  const int64_t full = num_layers / period, rest = num_layers % period;
  if (period == 1) return schedule[0] + " x" + std::to_string(num_layers);
  std::string line = "(" + runs(schedule) + ") x" + std::to_string(full);
  if (rest > 0)
    line += " + " + runs(std::vector<std::string>(schedule.begin(), schedule.begin() + rest));
  return line;
}

void ModelPreset::check_layer(int64_t layer) const {
  require(layer >= 0 && layer < num_layers, "--layer", layer,
          "must be in [0, " + std::to_string(num_layers) + ") for " + name +
              " (layers are counted from 0)");
}

nlohmann::json ModelPreset::layer_entry(int64_t layer) const {
  check_layer(layer);
  const std::string& type = type_of(layer);
  const PresetLayerType& t = layer_types.at(type);
  if (t.pattern.is_null())
    throw InvalidArgument("--preset", name,
                          "layer " + std::to_string(layer) + " (" + type + ") needs the " +
                              t.missing_kind + " pattern kind, which this version does not have "
                              "yet (docs/models.md)");
  nlohmann::json entry = t.pattern;
  if (t.seed_per_layer) entry["seed"] = layer;
  return entry;
}

std::string models_dir() {
  const char* env = std::getenv("SPARSEATTN_MODELS_DIR");
  return env && *env ? env : SPARSEATTN_MODELS_DIR;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(models_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ModelPreset load_preset(const std::string& name) {
  const std::vector<std::string> names = preset_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InvalidArgument("--preset", name,
                          "must be one of: " + (list.empty() ? "(none found in " + models_dir() + ")" : list) +
                              " (sparseattn models lists them)");
  }
  const std::string file = (std::filesystem::path(models_dir()) / (name + ".json")).string();
  const nlohmann::json j = read_json_file("--preset", file);
  ModelPreset p;
  p.file = file;
  p.name = field<std::string>(j, "name", file);
  p.model = field<std::string>(j, "model", file);
  p.source = field<std::string>(j, "source", file);
  p.causal = field<bool>(j, "causal", file);
  p.num_layers = field<int64_t>(j, "num_layers", file);
  p.num_heads = field<int64_t>(j, "num_heads", file);
  p.num_kv_heads = field<int64_t>(j, "num_kv_heads", file);
  p.head_dim = field<int64_t>(j, "head_dim", file);
  p.kv_bytes_per_value = field<int64_t>(j, "kv_bytes_per_value", file);
  p.scale = field<double>(j, "scale", file);
  if (j.contains("softcap") && !j.at("softcap").is_null()) p.softcap = field<double>(j, "softcap", file);
  p.sinks = field<bool>(j, "sinks", file);
  p.schedule = field<std::vector<std::string>>(j, "schedule", file);
  require(p.num_layers >= 1 && p.num_heads >= 1 && p.head_dim >= 1 && !p.schedule.empty(),
          "--preset", file, "num_layers, num_heads, head_dim >= 1 and a non-empty schedule");
  const nlohmann::json types = j.contains("layer_types") ? j.at("layer_types") : nlohmann::json();
  require(types.is_object(), "--preset", file, "layer_types: must be an object");
  for (const auto& [type, t] : types.items()) {
    PresetLayerType lt;
    lt.pattern = t.contains("pattern") ? t.at("pattern") : nlohmann::json();
    lt.missing_kind = t.value("missing_kind", std::string("(unnamed)"));
    lt.seed_per_layer = t.value("seed_per_layer", false);
    p.layer_types[type] = lt;
  }
  for (const std::string& s : p.schedule)
    require(p.layer_types.count(s) == 1, "--preset", file,
            "schedule: names layer type \"" + s + "\", which layer_types does not define");
  require(p.name == name, "--preset", file, "name: must equal the file name \"" + name + "\"");
  return p;
}

PresetLayerCall preset_layer_call(const ModelPreset& p, int64_t layer) {
  PresetLayerCall c;
  c.entry = p.layer_entry(layer);  // checks the layer and the kind
  c.type = p.type_of(layer);
  c.pattern = flags_from_json(c.entry, "--preset " + p.name + ": layer " + std::to_string(layer));
  c.scale = p.scale;
  c.softcap = p.softcap;
  c.sinks = p.sinks;
  return c;
}

void check_preset_inputs(const ModelPreset& p, const Shape& q, const Shape& k, const Shape& v,
                         bool bshd) {
  // Rank 2 to 4, leading dimensions 1 when omitted: heads at [1] (bhsd) or [2] (bshd).
  const auto heads = [bshd](const Shape& s) -> int64_t {
    if (s.size() < 3) return 1;
    if (s.size() == 3) return bshd ? s[1] : s[0];  // [L, H, D] or [H, L, D]
    return s[bshd ? 2 : 1];
  };
  const std::string of = " (--preset " + p.name + ")";
  const struct {
    const char* name;
    const Shape& shape;
    int64_t want;
    const char* what;
  } rows[] = {{"--q", q, p.num_heads, "num_heads"},
              {"--k", k, p.num_kv_heads, "num_kv_heads"},
              {"--v", v, p.num_kv_heads, "num_kv_heads"}};
  for (const auto& r : rows)
    require(heads(r.shape) == r.want, std::string(r.name) + " heads",
            std::to_string(heads(r.shape)) + " in shape " + shape_text(r.shape),
            "must be the preset's " + std::string(r.what) + " " + std::to_string(r.want) + of);
  for (const auto& r : rows) {
    if (std::string(r.name) == "--v") continue;  // v's head_dim_v may differ (MLA)
    const int64_t d = r.shape.empty() ? 0 : r.shape.back();
    require(d == p.head_dim, std::string(r.name) + " head_dim",
            std::to_string(d) + " in shape " + shape_text(r.shape),
            "must be the preset's head_dim " + std::to_string(p.head_dim) + of);
  }
}

}  // namespace sparseattn::api
