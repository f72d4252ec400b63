// _sparseattn.convention_mask (python/src/mask_bindings.cpp): api/convention_mask.h, the mask
// `sparseattn mask` writes, under the conventions and --global-mask; Pattern.mask() calls it.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_mask_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
