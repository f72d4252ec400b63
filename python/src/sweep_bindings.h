// The bindings of api/sweep.h (python/src/sweep_bindings.cpp): _sparseattn.sweep, the engine
// of `sparseattn sweep`, which sparseattn.sweep() (sparseattn/sweep.py) wraps.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_sweep_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
