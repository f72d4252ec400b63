// _sparseattn.field_spellings() and _sparseattn.spell_flag() (python/src/field_bindings.h).
#include "python/src/field_bindings.h"

#include <pybind11/stl.h>

#include <cstddef>
#include <string>

#include "core/field.h"

namespace sparseattn::python {

namespace py = pybind11;

void register_field_bindings(py::module_& m) {
  // [{"name": "global", "flag": "--global", "keyword": "global_tokens"}, ...], one per
  // Field, in core/field.h's order.
  m.def("field_spellings", [] {
    size_t count = 0;
    const FieldSpelling* rows = field_spellings(&count);
    py::list out;
    for (size_t i = 0; i < count; ++i) {
      py::dict d;
      d["name"] = rows[i].name;
      d["flag"] = rows[i].flag;
      d["keyword"] = rows[i].keyword;
      out.append(d);
    }
    return out;
  });
  // spell_flag(flag, "keyword" | "name" | "flag"): core/field.h spell_flag.
  m.def("spell_flag", [](const std::string& flag, const std::string& spelling) {
    if (spelling == "keyword") return spell_flag(flag, Spelling::keyword);
    if (spelling == "name") return spell_flag(flag, Spelling::name);
    if (spelling == "flag") return spell_flag(flag, Spelling::flag);
    throw py::value_error("spelling must be keyword, name or flag");
  }, py::arg("flag"), py::arg("spelling") = "keyword");
}

}  // namespace sparseattn::python
