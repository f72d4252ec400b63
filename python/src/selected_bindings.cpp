// Selected attention for Python: the spec of `selected` / `selected-blocks` from an index
// array, and the float64 selection functions (pattern/select.h). Errors name the Python
// keyword: FieldError through the module's translator, the selection functions' own
// InvalidArgument already by keyword ("top_k", "scores shape").
#include "python/src/selected_bindings.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "core/field.h"
#include "api/pattern_flags.h"
#include "pattern/block_mask.h"
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
  // contract §3.17: FlexAttention's BlockMask tables -> block_indices; errors name the keywords.
  m.def("block_indices_from_block_mask",
        [](const py::array& kv_num_blocks, const py::array& kv_indices,
           std::optional<py::array> full_kv_num_blocks, std::optional<py::array> full_kv_indices) {
          const Tensor<int64_t> num = int_tensor(kv_num_blocks, "kv_num_blocks");
          const Tensor<int64_t> idx = int_tensor(kv_indices, "kv_indices");
          std::optional<Tensor<int64_t>> full_num, full_idx;
          if (full_kv_num_blocks) full_num = int_tensor(*full_kv_num_blocks, "full_kv_num_blocks");
          if (full_kv_indices) full_idx = int_tensor(*full_kv_indices, "full_kv_indices");
          return to_numpy(block_indices_from_block_mask(num, idx, full_num ? &*full_num : nullptr,
                                                        full_idx ? &*full_idx : nullptr));
        },
        py::arg("kv_num_blocks"), py::arg("kv_indices"), py::arg("full_kv_num_blocks"),
        py::arg("full_kv_indices"));
  m.attr("flex_block_size") = kFlexBlockSize;  // FlexAttention's default BLOCK_SIZE
  // The folder form, read as --block-mask reads it (api/pattern_flags.h).
  m.def("read_block_mask", [](const std::string& dir) { return to_numpy(api::read_block_mask(dir, "block_mask")); },
        py::arg("dir"));
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
