// Checks contract §1.3 (.npy files) and §5.1 (malformed files refused).
// core/npy: round trips for every dtype, float16 widening (subnormals, inf, nan), the
// exact bytes NumPy writes, and every malformed file of npy.h's list.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/npy.h"

namespace sparseattn {
namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "sparseattn_npy_" + std::to_string(::getpid()) + "_" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// A .npy file as NumPy lays it out: version `major`.0, the dict padded to 64 bytes.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1,
                      int minor = 0) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  for (size_t b = 0; b < (major == 1 ? 2u : 4u); ++b)
    out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

// Expects read to throw InvalidArgument whose message names `what`, the file, and
// contains `fragment`.
template <class Read>
void expect_rejected(Read read, const std::string& path, const std::string& fragment) {
  try {
    read(path);
    FAIL() << "accepted " << path << "; expected an error containing '" << fragment << "'";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.argument(), "--q");
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

auto read_float = [](const std::string& p) { return read_npy_float(p, "--q"); };

TEST(Npy, WritesExactlyTheBytesNumpySaveWrites) {
  // np.save(f, np.zeros((2, 3))): 10-byte prefix + 118-byte header = 128.
  const std::string path = temp_path("golden.npy");
  write_npy(path, Tensor<double>({2, 3}, 0.0));
  const std::string bytes = read_bytes(path);
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(bytes.size(), 128u + 6 * 8);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]),
            118);
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_EQ(bytes.substr(10 + dict.size(), 117 - dict.size()),
            std::string(117 - dict.size(), ' '));
  std::remove(path.c_str());
}

TEST(Npy, OneDimensionalAndScalarShapesUsePythonTupleSyntax) {
  const std::string p1 = temp_path("rank1.npy"), p0 = temp_path("rank0.npy");
  write_npy(p1, Tensor<int64_t>({3}, 7));
  Tensor<int64_t> scalar;
  scalar.data = {42};
  write_npy(p0, scalar);
  EXPECT_NE(read_bytes(p1).find("'shape': (3,), }"), std::string::npos);
  EXPECT_NE(read_bytes(p0).find("'shape': (), }"), std::string::npos);
  const Tensor<int64_t> back = read_npy_int(p0, "--q");
  EXPECT_TRUE(back.shape.empty());
  ASSERT_EQ(back.data.size(), 1u);
  EXPECT_EQ(back.data[0], 42);
  std::remove(p1.c_str());
  std::remove(p0.c_str());
}

TEST(Npy, RoundTripFloat64IsBitExact) {
  Tensor<double> x({2, 1, 3, 2});
  const double values[] = {0.0, -0.0, 1.0 / 3.0, -1e-308, 4.9e-324, 1.7976931348623157e308,
                           INFINITY, -INFINITY, 2.5, -7.25, 1e-10, 123456789.125};
  for (int e = 0; e < 12; ++e) x.data[e] = values[e];
  const std::string path = temp_path("f8.npy");
  write_npy(path, x);
  const Tensor<double> y = read_npy_float(path, "--q");
  EXPECT_EQ(y.shape, x.shape);
  for (int e = 0; e < 12; ++e) {
    EXPECT_EQ(std::memcmp(&x.data[e], &y.data[e], sizeof(double)), 0) << "element " << e;
  }
  EXPECT_EQ(read_npy_header(path, "--q").dtype, NpyDtype::float64);
  std::remove(path.c_str());
}

TEST(Npy, RoundTripFloat32WidensExactly) {
  Tensor<float> x({5}, 0.0f);
  x.data = {1.0f / 3.0f, -2.5f, 1e-40f /* subnormal */, 3.4028235e38f, -0.0f};
  const std::string path = temp_path("f4.npy");
  write_npy(path, x);
  EXPECT_EQ(read_npy_header(path, "--q").dtype, NpyDtype::float32);
  const Tensor<double> y = read_npy_float(path, "--q");
  for (int e = 0; e < 5; ++e) EXPECT_EQ(y.data[e], static_cast<double>(x.data[e]));
  EXPECT_TRUE(std::signbit(y.data[4]));
  std::remove(path.c_str());
}

TEST(Npy, RoundTripIntegersAndMasks) {
  const std::string p64 = temp_path("i8.npy"), p32 = temp_path("i4.npy");
  const std::string pu8 = temp_path("u1.npy"), pb = temp_path("b1.npy");
  Tensor<int64_t> a({2, 2}, 0);
  a.data = {-1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 5};
  Tensor<int32_t> b({3}, 0);
  b.data = {-7, 0, std::numeric_limits<int32_t>::max()};
  Tensor<uint8_t> m({2, 3}, 0);
  m.data = {1, 0, 1, 1, 1, 0};
  write_npy(p64, a);
  write_npy(p32, b);
  write_npy(pu8, m, false);
  write_npy(pb, m, true);
  EXPECT_EQ(read_npy_int(p64, "--q").data, a.data);
  EXPECT_EQ(read_npy_int(p32, "--q").data, (std::vector<int64_t>{-7, 0, 2147483647}));
  EXPECT_EQ(read_npy_header(pu8, "--q").dtype, NpyDtype::uint8);
  EXPECT_EQ(read_npy_header(pb, "--q").dtype, NpyDtype::boolean);
  EXPECT_NE(read_bytes(pb).find("'|b1'"), std::string::npos);
  EXPECT_EQ(read_npy_mask(pu8, "--q").data, m.data);
  EXPECT_EQ(read_npy_mask(pb, "--q").shape, (Shape{2, 3}));
  EXPECT_EQ(read_npy_mask(pb, "--q").data, m.data);
  EXPECT_EQ(read_npy_int(pu8, "--q").data, (std::vector<int64_t>{1, 0, 1, 1, 1, 0}));
  for (const auto& p : {p64, p32, pu8, pb}) std::remove(p.c_str());
}

TEST(Npy, Float16WideningIsExactIncludingSubnormalsInfNan) {
  // Bit patterns and their exact values (IEEE 754 binary16).
  const uint16_t bits[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00,
                           0xc000, 0x3555, 0x7bff, 0x7c00, 0xfc00, 0x7e00};
  const double want[] = {0.0,
                         -0.0,
                         std::ldexp(1.0, -24),           // smallest subnormal
                         1023 * std::ldexp(1.0, -24),    // largest subnormal
                         std::ldexp(1.0, -14),           // smallest normal
                         1.0,
                         -2.0,
                         0.333251953125,                 // float16(1/3)
                         65504.0,                        // largest finite
                         INFINITY,
                         -INFINITY,
                         NAN};
  std::string data;
  for (uint16_t b : bits) data.append(reinterpret_cast<const char*>(&b), 2);
  const std::string path = temp_path("f2.npy");
  write_bytes(path, npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (12,), }", data));
  EXPECT_EQ(read_npy_header(path, "--q").dtype, NpyDtype::float16);
  const Tensor<double> y = read_npy_float(path, "--q");
  ASSERT_EQ(y.data.size(), 12u);
  for (int e = 0; e < 11; ++e) EXPECT_EQ(y.data[e], want[e]) << "bits 0x" << std::hex << bits[e];
  EXPECT_TRUE(std::signbit(y.data[1]));
  EXPECT_TRUE(std::isnan(y.data[11]));
  std::remove(path.c_str());
}

TEST(Npy, ReadsFormatVersions2And3AndKeysInAnyOrder) {
  const std::string data = raw<double>({1.5, -2.0});
  for (int major : {2, 3}) {
    const std::string path = temp_path("v" + std::to_string(major) + ".npy");
    write_bytes(path, npy_bytes("{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f8\"}",
                                data, major));
    const Tensor<double> y = read_npy_float(path, "--q");
    EXPECT_EQ(y.shape, (Shape{1, 2}));
    EXPECT_EQ(y.data, (std::vector<double>{1.5, -2.0}));
    std::remove(path.c_str());
  }
}

TEST(Npy, WriteIsAtomicAndLeavesNoTempFile) {
  const std::string path = temp_path("atomic.npy");
  write_npy(path, Tensor<double>({4}, 1.0));
  write_npy(path, Tensor<double>({2}, 2.0));  // replaces the old file whole
  EXPECT_EQ(read_npy_float(path, "--q").data, (std::vector<double>{2.0, 2.0}));
  EXPECT_FALSE(exists(path + ".tmp-" + std::to_string(::getpid())));
  std::remove(path.c_str());
}

TEST(Npy, UnwritablePathThrowsRuntimeErrorNamingIt) {
  const std::string path = "/nonexistent-dir-sparseattn/x.npy";
  try {
    write_npy(path, Tensor<double>({1}, 0.0));
    FAIL() << "wrote to " << path;
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Npy, TextWriterIsAtomic) {
  const std::string path = temp_path("report.json");
  write_text_atomic(path, "{\"pass\": true}\n");
  EXPECT_EQ(read_bytes(path), "{\"pass\": true}\n");
  std::remove(path.c_str());
}

// --- Malformed files: each is an InvalidArgument naming the flag, the file and the
// problem. ------------------------------------------------------------------------

struct Malformed {
  const char* name;
  std::string bytes;
  const char* fragment;
};

std::string f8_dict(const std::string& shape) {
  return "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
}

TEST(Npy, EveryMalformedFileIsAClearError) {
  const std::string two = raw<double>({1.0, 2.0});
  const std::string good = npy_bytes(f8_dict("(2,)"), two);
  const std::vector<Malformed> cases = {
      {"empty", "", "magic"},
      {"bad_magic", "\x93NUMPZ" + good.substr(6), "magic"},
      {"text_file", "hello, world\n", "magic"},
      {"truncated_version", good.substr(0, 7), "truncated .npy header"},
      {"truncated_length", good.substr(0, 9), "truncated .npy header"},
      {"truncated_header", good.substr(0, 40), "truncated .npy header"},
      {"bad_version", good.substr(0, 6) + "\x04" + good.substr(7), "version 4.0"},
      {"bad_minor", good.substr(0, 7) + "\x01" + good.substr(8), "version 1.1"},
      {"truncated_data", good.substr(0, good.size() - 3), "truncated .npy data"},
      {"trailing_bytes", good + "xyz", "bytes after the data"},
      {"fortran_order",
       npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", two), "Fortran"},
      {"big_endian", npy_bytes("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", two),
       "big-endian"},
      {"complex", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", two),
       "unsupported dtype '<c8'"},
      {"int16", npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (8,), }", two),
       "unsupported dtype '<i2'"},
      {"structured",
       npy_bytes("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", two),
       "structured"},
      {"shape_too_big", npy_bytes(f8_dict("(100000000000, 100000000000)"), two),
       "would not fit in memory"},
      {"shape_overflows_64_bits", npy_bytes(f8_dict("(99999999999999999999,)"), two),
       "64 bits"},
      {"negative_shape", npy_bytes(f8_dict("(-2,)"), two), "non-negative"},
      {"missing_shape", npy_bytes("{'descr': '<f8', 'fortran_order': False, }", two),
       "lacks one of"},
      {"unknown_key", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), "
                                "'extra': 1, }", two),
       "unexpected header key 'extra'"},
      {"not_a_dict", npy_bytes("['descr', '<f8']", two), "malformed .npy header"},
      {"huge_header_length", good.substr(0, 8) + std::string("\xff\xff", 2) + good.substr(10),
       "truncated .npy header"},
  };
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = temp_path(std::string(c.name) + ".npy");
    write_bytes(path, c.bytes);
    expect_rejected(read_float, path, c.fragment);
    std::remove(path.c_str());
  }
}

TEST(Npy, MissingFileIsAClearError) {
  expect_rejected(read_float, temp_path("does_not_exist.npy"), "cannot open");
}

TEST(Npy, WrongDtypeForTheReaderIsAClearError) {
  const std::string pi = temp_path("int_as_float.npy"), pf = temp_path("float_as_mask.npy");
  const std::string pm = temp_path("mask_value_2.npy"), pfi = temp_path("float_as_int.npy");
  write_npy(pi, Tensor<int64_t>({2}, 1));
  write_npy(pf, Tensor<double>({2}, 1.0));
  write_npy(pm, Tensor<uint8_t>({3}, 2), false);
  write_npy(pfi, Tensor<float>({2}, 1.0f));
  expect_rejected(read_float, pi, "expected a floating-point dtype");
  expect_rejected([](const std::string& p) { return read_npy_mask(p, "--q"); }, pf,
                  "expected a mask of dtype bool or uint8");
  expect_rejected([](const std::string& p) { return read_npy_mask(p, "--q"); }, pm,
                  "a mask holds only 0 and 1");
  expect_rejected([](const std::string& p) { return read_npy_int(p, "--q"); }, pfi,
                  "expected an integer dtype");
  for (const auto& p : {pi, pf, pm, pfi}) std::remove(p.c_str());
}

}  // namespace
}  // namespace sparseattn
