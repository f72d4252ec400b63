#include "python/src/arrays.h"

#include <cstring>
#include <vector>

#include "core/error.h"

namespace sparseattn::python {

namespace {

Shape shape_of(const py::array& a) {
  Shape s;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s.push_back(static_cast<int64_t>(a.shape(d)));
  return s;
}

bool c_contiguous(const py::array& a) {
  return (a.flags() & py::array::c_style) != 0;
}

}  // namespace

ArrayView float_view(const py::array& a, const std::string& name) {
  ArrayView v;
  const bool f64 = a.dtype().is(py::dtype::of<double>());
  const bool f32 = a.dtype().is(py::dtype::of<float>());
  require(f64 || f32, name + " dtype", std::string(py::str(a.dtype())),
          "must be float16, float32 or float64");
  require(c_contiguous(a), name, "a strided array", "must be C-contiguous");
  v.keep = a;
  v.data = a.data();
  v.is_float32 = f32;
  v.shape = shape_of(a);
  return v;
}

Tensor<double> to_tensor(const ArrayView& view) {
  Tensor<double> t;
  t.shape = view.shape;
  const int64_t n = checked_numel(view.shape, sizeof(double), "tensor shape");
  t.data.resize(static_cast<size_t>(n));
  if (view.is_float32) {
    const float* src = static_cast<const float*>(view.data);
    for (int64_t e = 0; e < n; ++e) t.data[static_cast<size_t>(e)] = static_cast<double>(src[e]);
  } else if (n > 0) {
    std::memcpy(t.data.data(), view.data, static_cast<size_t>(n) * sizeof(double));
  }
  return t;
}

Tensor<uint8_t> mask_tensor(const py::array& a, const std::string& name) {
  require(a.dtype().is(py::dtype::of<uint8_t>()) && c_contiguous(a), name + " dtype",
          std::string(py::str(a.dtype())), "must be bool or uint8 (0/1)");
  Tensor<uint8_t> t;
  t.shape = shape_of(a);
  const auto* src = static_cast<const uint8_t*>(a.data());
  t.data.assign(src, src + a.size());
  for (size_t e = 0; e < t.data.size(); ++e)
    require(t.data[e] <= 1, name + " entry", static_cast<int>(t.data[e]), "must be 0 or 1");
  return t;
}

Tensor<int64_t> int_tensor(const py::array& a, const std::string& name) {
  require(a.dtype().is(py::dtype::of<int64_t>()) && c_contiguous(a), name + " dtype",
          std::string(py::str(a.dtype())), "must be an integer dtype");
  Tensor<int64_t> t;
  t.shape = shape_of(a);
  const auto* src = static_cast<const int64_t*>(a.data());
  t.data.assign(src, src + a.size());
  return t;
}

ScoreMods score_mods(std::optional<double> softcap, const std::optional<py::array>& alibi,
                     const std::optional<py::array>& sinks) {
  ScoreMods m;
  m.softcap = softcap;
  if (alibi) m.alibi_slopes = to_tensor(float_view(*alibi, "alibi_slopes"));
  if (sinks) m.sinks = to_tensor(float_view(*sinks, "sinks"));
  return m;
}

template <class T>
py::array to_numpy(Tensor<T>&& t, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != t.numel())  // a bug here, never the caller's input
    throw sparseattn::RuntimeError("to_numpy: shape " + shape_text(shape) + " does not hold " +
                                   std::to_string(t.numel()) + " elements");
  if (n == 0) return py::array_t<T>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  auto* storage = new std::vector<T>(std::move(t.data));
  py::capsule owner(storage, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<T>(dims, storage->data(), owner);
}

template py::array to_numpy(Tensor<double>&&, const Shape&);
template py::array to_numpy(Tensor<float>&&, const Shape&);
template py::array to_numpy(Tensor<uint8_t>&&, const Shape&);
template py::array to_numpy(Tensor<int64_t>&&, const Shape&);
template py::array to_numpy(Tensor<int32_t>&&, const Shape&);

}  // namespace sparseattn::python
