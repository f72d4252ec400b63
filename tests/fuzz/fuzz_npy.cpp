// fuzz_npy: arbitrary bytes as a .npy file, through every reader of core/npy.h.
//
// Asserts (docs/robustness.md):
//   - each reader returns or throws InvalidArgument (contract §5); nothing else, no
//     sanitizer report, no allocation beyond the file's own size;
//   - on success the tensor is consistent: data.size() equals the product of the shape,
//     and the file is exactly header + data (the reader refuses trailing bytes);
//   - what was read survives a round trip: written back with write_npy and read again, it
//     has the same shape and the same bits (NaN payloads included for float64).
#include <cstring>

#include "core/npy.h"
#include "fuzz_common.h"

namespace {

using namespace sparseattn;
using fuzz::fail;

int64_t product(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the reader has bounded it by the file size
  return n;
}

template <class T>
void require_consistent(const Tensor<T>& t, const NpyHeader& h) {
  FUZZ_REQUIRE(t.shape == h.shape, shape_text(t.shape) + " vs header " + shape_text(h.shape));
  FUZZ_REQUIRE(static_cast<int64_t>(t.data.size()) == product(t.shape), shape_text(t.shape));
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(T)) == 0);
}

int64_t itemsize(NpyDtype t) {
  switch (t) {
    case NpyDtype::float16: return 2;
    case NpyDtype::float32: case NpyDtype::int32: return 4;
    case NpyDtype::float64: case NpyDtype::int64: return 8;
    default: return 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("in.npy");
  const std::string back = fuzz::scratch_path("back.npy");
  fuzz::write_bytes(path, data, size);

  NpyHeader header{};
  try {
    header = read_npy_header(path, "--fuzz");
  } catch (const InvalidArgument&) {
    return 0;  // refused as a whole; the typed readers below would refuse it too
  }
  FUZZ_REQUIRE(header.data_offset + product(header.shape) * itemsize(header.dtype) ==
                   static_cast<int64_t>(size),
               "file size " + std::to_string(size));

  try {
    const Tensor<double> x = read_npy_float(path, "--fuzz");
    require_consistent(x, header);
    write_npy(back, x);
    const Tensor<double> y = read_npy_float(back, "--fuzz");
    // float16/32 widen exactly to float64, so the float64 copy holds the same values.
    FUZZ_REQUIRE(same_bits(x, y), "float round trip");
  } catch (const InvalidArgument&) {
  }
  try {
    const Tensor<uint8_t> m = read_npy_mask(path, "--fuzz");
    require_consistent(m, header);
    for (uint8_t b : m.data) FUZZ_REQUIRE(b <= 1, "mask value");
    write_npy(back, m, /*as_bool=*/true);
    FUZZ_REQUIRE(same_bits(m, read_npy_mask(back, "--fuzz")), "mask round trip");
  } catch (const InvalidArgument&) {
  }
  try {
    const Tensor<int64_t> n = read_npy_int(path, "--fuzz");
    require_consistent(n, header);
    write_npy(back, n);
    FUZZ_REQUIRE(same_bits(n, read_npy_int(back, "--fuzz")), "int round trip");
  } catch (const InvalidArgument&) {
  }
  return 0;
}
