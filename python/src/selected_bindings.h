// The bindings of selected attention (contract §3.16–§3.18; python/src/selected_bindings.cpp):
// _sparseattn.make_selected_spec (Pattern.selected, Pattern.selected_blocks) and
// _sparseattn.select_topk / select_dsa / select_moba / select_nsa (sparseattn.select).
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_selected_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
