// NumPy arrays <-> the project's Tensor, for the Python module (python/src/module.cpp).
//
// Reading: the Python layer (sparseattn/_arrays.py) hands over C-contiguous float32 or
// float64 arrays (other dtypes and layouts it converts first). An ArrayView keeps the
// caller's buffer alive and is read in place — no NumPy-side copy — into the float64
// Tensor every kernel call starts from (registry.h: Problem holds float64 q/k/v and their
// float32 roundings; the CLI builds the same from its .npy files).
// Writing: a result Tensor's storage is moved into the returned array (no copy).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/score_mods.h"
#include "core/tensor.h"

namespace sparseattn::python {

namespace py = pybind11;

// A C-contiguous float32/float64 array, readable without the GIL while `keep` lives.
struct ArrayView {
  py::array keep;
  const void* data = nullptr;
  bool is_float32 = false;
  Shape shape;
};

// Throws InvalidArgument(name) unless `a` is C-contiguous float32 or float64.
ArrayView float_view(const py::array& a, const std::string& name);

// The view's values as float64 (exact widening for float32). No GIL needed.
Tensor<double> to_tensor(const ArrayView& view);

// C-contiguous uint8 (0/1) or int64 arrays, copied into a Tensor (pattern parameters:
// masks, random tables, segment ids; small next to q/k/v).
Tensor<uint8_t> mask_tensor(const py::array& a, const std::string& name);
Tensor<int64_t> int_tensor(const py::array& a, const std::string& name);

// softcap=, alibi_slopes=, sinks= (contract §2.8–§2.9), read with the GIL held; their ranges
// are checked against the shapes later, by make_problem or the oracle (FieldError, spelled as
// the keyword).
ScoreMods score_mods(std::optional<double> softcap, const std::optional<py::array>& alibi,
                     const std::optional<py::array>& sinks);

// Moves `t`'s storage into a NumPy array of shape `shape` (same number of elements).
template <class T>
py::array to_numpy(Tensor<T>&& t, const Shape& shape);
template <class T>
py::array to_numpy(Tensor<T>&& t) {
  const Shape shape = t.shape;
  return to_numpy(std::move(t), shape);
}

}  // namespace sparseattn::python
