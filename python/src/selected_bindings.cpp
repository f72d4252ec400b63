// Selected attention for Python: the spec of `selected` / `selected-blocks` from an index
// array, and the float64 selection functions (pattern/select.h). Errors name the Python
// keyword: FieldError through the module's translator, the selection functions' own
// InvalidArgument already by keyword ("top_k", "scores shape").
#include "python/src/selected_bindings.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "core/field.h"
#include "pattern/pattern.h"
#include "pattern/select.h"
#include "python/src/arrays.h"

namespace sparseattn::python {

namespace {

PatternSpec make_selected_spec(const std::string& kind, const py::array& table, bool causal,
                               const std::string& duplicates, std::optional<int64_t> block_size_q,
                               std::optional<int64_t> block_size_k) {
  PatternSpec s;
  s.kind = parse_pattern_kind(kind);
  s.causal = causal;
  s.duplicates = parse_duplicates(duplicates);
  s.block_size_q = block_size_q;
  s.block_size_k = block_size_k;
  if (s.kind == PatternKind::selected) s.kv_indices = int_tensor(table, "kv_indices");
  else s.block_indices = int_tensor(table, "block_indices");
  validate_spec(s);
  return s;
}

Tensor<double> floats(const py::array& a, const char* name) { return to_tensor(float_view(a, name)); }

}  // namespace

void register_selected_bindings(py::module_& m) {
  m.def("make_selected_spec", &make_selected_spec, py::arg("kind"), py::arg("table"),
        py::arg("causal"), py::arg("duplicates"), py::arg("block_size_q"), py::arg("block_size_k"));
  m.def("select_topk", [](const py::array& scores, int64_t top_k, bool causal) {
    return to_numpy(select_topk(floats(scores, "scores"), top_k, causal));
  });
  m.def("select_dsa", [](const py::array& q, const py::array& k, const py::array& w, int64_t top_k) {
    return to_numpy(select_dsa(floats(q, "index_q"), floats(k, "index_k"), floats(w, "weights"), top_k));
  });
  m.def("dsa_index_scores", [](const py::array& q, const py::array& k, const py::array& w) {
    return to_numpy(dsa_index_scores(floats(q, "index_q"), floats(k, "index_k"), floats(w, "weights")));
  });
  m.def("select_moba", [](const py::array& q, const py::array& k, int64_t chunk_size, int64_t top_k) {
    return to_numpy(select_moba(floats(q, "q"), floats(k, "k"), chunk_size, top_k));
  });
  m.def("select_nsa", [](const py::array& scores, int64_t block_size_k, int64_t num_selected,
                         int64_t num_initial, int64_t num_local, int64_t seq_len_k) {
    return to_numpy(select_nsa(floats(scores, "scores"), block_size_k, num_selected, num_initial,
                               num_local, seq_len_k));
  });
}

}  // namespace sparseattn::python
