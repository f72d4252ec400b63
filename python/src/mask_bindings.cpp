// _sparseattn.convention_mask (python/src/mask_bindings.h).
#include "python/src/mask_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "api/convention_mask.h"
#include "api/conventions.h"
#include "core/field.h"
#include "python/src/arrays.h"

namespace sparseattn::python {

namespace py = pybind11;

namespace {

// [batch, num_heads, seq_len_q, seq_len_k] uint8; errors name the Python keywords.
py::array convention_mask(const PatternSpec& spec, int64_t num_heads, int64_t seq_len_q,
                          int64_t seq_len_k, std::optional<py::array> key_padding_mask,
                          const std::string& key_padding_polarity, const std::string& causal_align,
                          const std::string& padding_align, std::optional<py::array> global_mask) {
  PatternSpec s = spec;
  if (key_padding_mask) s.key_padding_mask = mask_tensor(*key_padding_mask, "key_padding_mask");
  api::ConventionFlags cf;
  cf.key_padding_polarity = key_padding_polarity;
  cf.causal_align = causal_align;
  cf.padding_align = padding_align;
  const api::Conventions conv = api::parse_conventions(cf);
  PatternSizes z;
  z.batch = s.key_padding_mask && s.key_padding_mask->rank() == 2 ? s.key_padding_mask->dim(0) : 1;
  z.num_heads = num_heads;
  z.seq_len_q = seq_len_q;
  z.seq_len_k = seq_len_k;
  std::optional<Tensor<uint8_t>> gm;
  if (global_mask) gm = mask_tensor(*global_mask, "global_mask");
  Tensor<uint8_t> m;
  {
    py::gil_scoped_release nogil;
    m = api::convention_mask(s, z, conv, gm ? &*gm : nullptr, Spelling::keyword);
  }
  return to_numpy(std::move(m));
}

}  // namespace

void register_mask_bindings(py::module_& m) {
  m.def("convention_mask", &convention_mask, py::arg("spec"), py::arg("num_heads"),
        py::arg("seq_len_q"), py::arg("seq_len_k"), py::arg("key_padding_mask"),
        py::arg("key_padding_polarity"), py::arg("causal_align"), py::arg("padding_align"),
        py::arg("global_mask"));
}

}  // namespace sparseattn::python
