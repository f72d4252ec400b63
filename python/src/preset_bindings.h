// The model presets (api/model_presets.h, api/preset_results.h) as _sparseattn.preset_names,
// .preset_reach and .preset_info (python/src/preset_bindings.cpp): `sparseattn models`,
// `reach --preset NAME --json` and `info --preset NAME --json` for one seq_len.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_preset_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
