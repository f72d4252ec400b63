// NumPy .npy reading and writing (format versions 1.0, 2.0 and 3.0; the NumPy
// "format.py" specification, NEP 1).
//
// Accepted on read: little-endian (or byte-order-free '|') float16, float32, float64,
// uint8, bool, int32, int64; C order only. float16 is widened exactly. Every malformed
// file is a clear InvalidArgument naming `what` (usually the CLI flag, e.g. "--q") and
// the file: bad magic, unknown version, truncated header or data, trailing bytes,
// Fortran order, big-endian, unsupported dtype, a shape that would not fit in memory.
//
// Writes are atomic: data goes to "<path>.tmp-<pid>" and is renamed over <path> only
// when complete, so a failure never leaves a half-written file (contract §5).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace sparseattn {

enum class NpyDtype { float16, float32, float64, uint8, boolean, int32, int64 };

const char* npy_dtype_name(NpyDtype t);  // "float16", ..., "bool", ...

struct NpyHeader {
  NpyDtype dtype;
  Shape shape;
  int64_t data_offset;  // bytes from the start of the file to the first element
};

// Reads and validates only the header of `path`.
NpyHeader read_npy_header(const std::string& path, const std::string& what);

// Reads a floating-point array (float16/32/64) as float64. Integer/bool files are
// rejected ("expected a floating-point dtype").
Tensor<double> read_npy_float(const std::string& path, const std::string& what);

// Reads a bool or uint8 array as 0/1 bytes (uint8 values other than 0/1 are rejected).
Tensor<uint8_t> read_npy_mask(const std::string& path, const std::string& what);

// Reads an integer array (int32/int64/uint8) as int64.
Tensor<int64_t> read_npy_int(const std::string& path, const std::string& what);

// Atomic writers. Throw RuntimeError naming the path if it cannot be written.
void write_npy(const std::string& path, const Tensor<double>& x);
void write_npy(const std::string& path, const Tensor<float>& x);
void write_npy(const std::string& path, const Tensor<int64_t>& x);
void write_npy(const std::string& path, const Tensor<int32_t>& x);
void write_npy(const std::string& path, const Tensor<uint8_t>& x, bool as_bool);

// Checks, before any work is done, that `path` can receive an output: its folder exists
// and is writable, and `path` is absent or a regular file. Throws InvalidArgument naming
// `what` (e.g. "--out") otherwise.
void check_output_path(const std::string& path, const std::string& what);

// Writes `text` to `path` atomically (same temp-and-rename rule); for JSON and reports.
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace sparseattn
