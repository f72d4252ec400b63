// `check`'s report for Python: api::CheckResult (api/check_result.h) and its TensorReports,
// read-only, with the one renderer (api/check_render.h) as methods, so that the package's
// CheckReport.to_dict() is the JSON `sparseattn check` prints and CheckReport.summary() is
// its `--format text`, byte for byte (python/sparseattn/attention.py wraps these).
#include "python/src/report_bindings.h"

#include <pybind11/stl.h>

#include <string>

#include "api/check_render.h"
#include "api/check_result.h"

namespace sparseattn::python {

namespace py = pybind11;

void register_report_bindings(py::module_& m) {
  using api::CheckResult;
  using api::TensorReport;
  py::class_<TensorReport>(m, "TensorReport")
      .def_readonly("tensor", &TensorReport::tensor)
      .def_property_readonly("rows_are",
                             [](const TensorReport& t) {
                               return t.rows_are == api::RowKind::query ? "query" : "key";
                             })
      .def_readonly("passed", &TensorReport::pass)
      .def_readonly("nothing_compared", &TensorReport::nothing_compared)
      .def_readonly("reason", &TensorReport::reason)
      .def_readonly("num_elements", &TensorReport::num_elements)
      .def_readonly("num_compared", &TensorReport::num_compared)
      .def_readonly("num_nonfinite", &TensorReport::num_nonfinite)
      .def_readonly("num_mismatched", &TensorReport::num_mismatched)
      .def_readonly("max_abs_error", &TensorReport::max_abs_error)
      .def_readonly("max_rel_error", &TensorReport::max_rel_error)
      .def_readonly("max_abs_error_finite", &TensorReport::max_abs_error_finite)
      .def_readonly("max_rel_error_finite", &TensorReport::max_rel_error_finite)
      .def_property_readonly("worst_index",
                             [](const TensorReport& t) { return py::tuple(py::cast(t.worst_index)); })
      .def_readonly("worst_candidate", &TensorReport::worst_candidate)
      .def_readonly("worst_reference", &TensorReport::worst_reference)
      .def_readonly("error_over_tolerance", &TensorReport::error_over_tolerance)
      .def_property_readonly("atol", [](const TensorReport& t) { return t.tol.atol; })
      .def_property_readonly("rtol", [](const TensorReport& t) { return t.tol.rtol; })
      .def_readonly("rows_truncated", &TensorReport::rows_truncated)
      .def_readonly("probable_cause", &TensorReport::probable_cause)
      .def("json", [](const TensorReport& t) { return api::tensor_json(t).dump(); },
           "The report as `sparseattn check` prints it under its name (JSON text).")
      .def("line", &api::tensor_line, "One line in the manner of torch.testing.assert_close.");

  auto optional = [](const std::optional<TensorReport> CheckResult::*field) {
    return [field](const CheckResult& r) -> py::object {
      return (r.*field) ? py::cast(*(r.*field)) : py::none();
    };
  };
  py::class_<CheckResult>(m, "CheckResult")
      .def_readonly("passed", &CheckResult::pass)
      .def_readonly("oracle", &CheckResult::oracle)
      .def_readonly("pattern", &CheckResult::pattern)
      .def_readonly("conventions", &CheckResult::conventions)
      .def_readonly("o", &CheckResult::o)
      .def_property_readonly("lse", optional(&CheckResult::lse))
      .def_property_readonly("dq", optional(&CheckResult::dq))
      .def_property_readonly("dk", optional(&CheckResult::dk))
      .def_property_readonly("dv", optional(&CheckResult::dv))
      .def_property_readonly("dq_global", optional(&CheckResult::dq_global))
      .def_property_readonly("dk_global", optional(&CheckResult::dk_global))
      .def_property_readonly("dv_global", optional(&CheckResult::dv_global))
      .def_property_readonly("dsinks", optional(&CheckResult::dsinks))
      .def_readonly("compat", &CheckResult::compat)
      .def_readonly("global_projections", &CheckResult::global_projections)
      .def_readonly("gradient_oracle", &CheckResult::gradient_oracle)
      .def_readonly("tolerance_rule", &CheckResult::tolerance_rule)
      .def_readonly("rows_not_compared", &CheckResult::rows_not_compared)
      .def_readonly("probable_cause", &CheckResult::probable_cause)
      .def_readonly("hint", &CheckResult::hint)
      .def("json", [](const CheckResult& r) { return api::check_json(r).dump(); },
           "The JSON object `sparseattn check` prints (text).")
      .def("text", &api::check_text, "`sparseattn check --format text`'s output, byte for byte.");
}

}  // namespace sparseattn::python
