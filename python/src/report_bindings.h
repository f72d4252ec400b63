// The check report's bindings (python/src/report_bindings.cpp): api::CheckResult and
// api::TensorReport as the private classes _sparseattn.CheckResult and .TensorReport.
#pragma once

#include <pybind11/pybind11.h>

namespace sparseattn::python {

void register_report_bindings(pybind11::module_& m);

}  // namespace sparseattn::python
