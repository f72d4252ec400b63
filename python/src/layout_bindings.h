// _sparseattn.attend_layout, check_layout and layout_info (python/src/layout_bindings.cpp):
// packed variable-length batches, a KV cache filled to cache_seqlens and paged KV (contract
// §2.10–§2.12) through api/layout_check.h and api/layout_info.h, the functions `sparseattn
// attend`, `check` and `info` call under --cu-seqlens-q, --cache-seqlens and --block-table.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_layout_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
