// The spelling table of the request's fields (core/field.h) as _sparseattn.field_spellings()
// and _sparseattn.spell_flag() (python/src/field_bindings.cpp): the one rule that turns a
// command-line flag into its Python keyword, read by the parity test
// (python/tests/test_parity.py) instead of a second copy of the table.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_field_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
