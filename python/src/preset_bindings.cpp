// _sparseattn.preset_names, .preset_reach, .preset_info (python/src/preset_bindings.h).
#include "python/src/preset_bindings.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/model_presets.h"
#include "api/pattern_flags.h"
#include "api/preset_results.h"
#include "core/error.h"
#include "core/field.h"
#include "core/tensor.h"

namespace sparseattn::python {

namespace py = pybind11;

namespace {

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

// The presets' errors name their flags (--preset, --layer); Python names the keywords.
template <class F>
nlohmann::json keyword_errors(F&& f) {
  try {
    return f();
  } catch (const FieldError&) {
    throw;  // spelled by the module's translator
  } catch (const InvalidArgument& e) {
    const std::string& a = e.argument();
    if (a.rfind("--", 0) != 0) throw;
    const size_t end = a.find_first_of(" :");
    throw InvalidArgument(spell_flag(a.substr(0, end), Spelling::keyword) +
                              (end == std::string::npos ? "" : a.substr(end)),
                          e.value(), e.allowed());
  }
}

py::object preset_reach(const std::string& name, int64_t seq_len) {
  require(seq_len >= 1, "seq_len", seq_len, "must be an integer >= 1");
  nlohmann::json j;
  {
    py::gil_scoped_release nogil;
    j = keyword_errors([&] { return api::preset_reach_json(api::load_preset(name), seq_len); });
  }
  return json_to_python(j);
}

py::object preset_info(const std::string& name, int64_t seq_len, std::optional<int64_t> layer) {
  require(seq_len >= 1, "seq_len", seq_len, "must be an integer >= 1");
  nlohmann::json j;
  {
    py::gil_scoped_release nogil;
    j = keyword_errors(
        [&] { return api::preset_info_json(api::load_preset(name), seq_len, layer ? *layer : -1); });
  }
  return json_to_python(j);
}

// One layer of a preset for attend/check/Pattern.preset: (Spec, {type, scale, softcap, sinks,
// num_heads, num_kv_heads, head_dim}); with shapes (bhsd, as the arrays are), the heads and
// head_dim checked (api::check_preset_inputs).
py::tuple preset_layer(const std::string& name, int64_t layer, std::optional<Shape> q,
                       std::optional<Shape> k, std::optional<Shape> v) {
  api::PresetLayerCall c;
  api::ModelPreset p;
  keyword_errors([&] {
    p = api::load_preset(name);
    c = api::preset_layer_call(p, layer);
    if (q && k && v) api::check_preset_inputs(p, *q, *k, *v, /*bshd=*/false);
    return nlohmann::json();
  });
  const PatternSpec spec = api::to_spec(c.pattern);
  nlohmann::json info = {{"type", c.type}, {"scale", c.scale},
                         {"softcap", c.softcap ? nlohmann::json(*c.softcap) : nlohmann::json(nullptr)},
                         {"sinks", c.sinks}, {"num_heads", p.num_heads},
                         {"num_kv_heads", p.num_kv_heads}, {"head_dim", p.head_dim},
                         {"num_layers", p.num_layers}, {"pattern", c.entry}};
  return py::make_tuple(py::cast(spec), json_to_python(info));
}

}  // namespace

void register_preset_bindings(py::module_& m) {
  m.def("preset_names", [] { return api::preset_names(); });
  m.def("preset_reach", &preset_reach, py::arg("preset"), py::arg("seq_len"));
  m.def("preset_info", &preset_info, py::arg("preset"), py::arg("seq_len"), py::arg("layer"));
  m.def("preset_layer", &preset_layer, py::arg("preset"), py::arg("layer"), py::arg("q_shape"),
        py::arg("k_shape"), py::arg("v_shape"));
}

}  // namespace sparseattn::python
