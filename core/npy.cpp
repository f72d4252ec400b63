// NumPy .npy reading and writing. The format (NumPy's numpy/lib/format.py, NEP 1):
//
//   bytes 0-5   magic "\x93NUMPY"
//   bytes 6-7   format version major, minor: 1.0, 2.0 or 3.0
//   then        header length, little-endian: uint16 (1.0) or uint32 (2.0, 3.0)
//   then        the header: a Python dict literal, e.g.
//               {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//               padded with spaces and ended by '\n' so the data starts 64-byte aligned
//   then        the data, C order, numel * itemsize bytes, nothing after it.
//
// 3.0 only changes the header's text encoding (UTF-8 instead of latin-1); the keys and
// values we accept are ASCII, so one parser reads all three versions.
#include "core/npy.h"

#include <sys/stat.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <type_traits>

#include "core/error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.cpp copies little-endian .npy data verbatim; port it for big-endian hosts"
#endif

namespace sparseattn {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicBytes = 6;
// A header longer than this is not a tensor header (NumPy itself caps reads at 10 000
// bytes by default); refusing early keeps a corrupt length field from allocating GBs.
constexpr int64_t kMaxHeaderBytes = 1 << 20;

// Every malformed-file error reads "invalid <what> = <path>: <problem>".
[[noreturn]] void fail(const std::string& what, const std::string& path,
                       const std::string& problem) {
  throw InvalidArgument(what, path, problem);
}

int64_t itemsize(NpyDtype t) {
  switch (t) {
    case NpyDtype::float16: return 2;
    case NpyDtype::float32: return 4;
    case NpyDtype::float64: return 8;
    case NpyDtype::uint8: return 1;
    case NpyDtype::boolean: return 1;
    case NpyDtype::int32: return 4;
    case NpyDtype::int64: return 8;
  }
  return 1;
}

// --- A parser for the header's dict literal (only what NumPy writes: str keys; str,
// bool and tuple-of-int values). ---------------------------------------------------
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what, const std::string& path)
      : s_(text), what_(what), path_(path) {}

  NpyHeader parse() {
    NpyHeader h{};
    bool have_descr = false, have_order = false, have_shape = false;
    std::string descr;
    bool fortran = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') { ++pos_; break; }
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() != '\'' && peek() != '"')
          bad("'descr' is not a simple type string (structured dtypes are not supported)");
        descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      expect('}');
      break;
    }
    skip_space();
    if (pos_ != s_.size()) bad("text after the header dict");
    if (!have_descr || !have_order || !have_shape)
      bad("header lacks one of 'descr', 'fortran_order', 'shape'");
    if (fortran)
      fail(what_, path_, "Fortran-order array; save it in C order (numpy.ascontiguousarray)");
    h.dtype = parse_descr(descr);
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& problem) {
    fail(what_, path_, "malformed .npy header (" + problem + ")");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n'))
      ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (s_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    bad("'fortran_order' must be True or False");
  }
  Shape parse_shape() {
    Shape shape;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') { ++pos_; break; }
      if (peek() < '0' || peek() > '9') bad("shape entries must be non-negative integers");
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (INT64_MAX - 9) / 10) bad("shape entry does not fit in 64 bits");
        d = d * 10 + (s_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal, as old NumPy wrote it
      shape.push_back(d);
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      expect(')');
      break;
    }
    return shape;
  }
  NpyDtype parse_descr(const std::string& d) {
    if (d.size() >= 2 && d[0] == '>' && d.substr(1) != "u1" && d.substr(1) != "b1" &&
        d.substr(1) != "i1")
      fail(what_, path_, "big-endian dtype '" + d +
                             "'; save it little-endian (array.astype(array.dtype.newbyteorder('<')))");
    // '|' (no byte order) is what NumPy writes for one-byte types; '<' and '=' (native,
    // little-endian on every host this builds for) are accepted too.
    std::string body = d;
    if (!body.empty() && (body[0] == '<' || body[0] == '|' || body[0] == '=' || body[0] == '>'))
      body = body.substr(1);
    if (body == "f2") return NpyDtype::float16;
    if (body == "f4") return NpyDtype::float32;
    if (body == "f8") return NpyDtype::float64;
    if (body == "u1") return NpyDtype::uint8;
    if (body == "b1") return NpyDtype::boolean;
    if (body == "i4") return NpyDtype::int32;
    if (body == "i8") return NpyDtype::int64;
    fail(what_, path_, "unsupported dtype '" + d +
                           "'; allowed: float16, float32, float64, uint8, bool, int32, int64");
  }

  const std::string& s_;
  const std::string& what_;
  const std::string& path_;
  size_t pos_ = 0;
};

// The header plus everything needed to read the data that follows it.
struct OpenNpy {
  NpyHeader header;
  int64_t numel = 0;
  std::ifstream file;  // positioned at header.data_offset
};

OpenNpy open_npy(const std::string& path, const std::string& what) {
  OpenNpy f;
  f.file.open(path, std::ios::binary);
  if (!f.file) fail(what, path, std::string("cannot open the file (") + std::strerror(errno) + ")");
  f.file.seekg(0, std::ios::end);
  const int64_t file_bytes = static_cast<int64_t>(f.file.tellg());
  f.file.seekg(0, std::ios::beg);

  unsigned char pre[kMagicBytes + 2] = {};
  f.file.read(reinterpret_cast<char*>(pre), sizeof pre);
  if (f.file.gcount() < kMagicBytes || std::memcmp(pre, kMagic, kMagicBytes) != 0)
    fail(what, path, "not a .npy file (it does not start with the magic string \\x93NUMPY)");
  if (f.file.gcount() < static_cast<std::streamsize>(sizeof pre))
    fail(what, path, "truncated .npy header (the file ends inside the version field)");
  const int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(what, path, "unsupported .npy format version " + std::to_string(major) + "." +
                         std::to_string(minor) + "; allowed: 1.0, 2.0, 3.0");

  const int len_bytes = major == 1 ? 2 : 4;
  unsigned char len_le[4] = {};
  f.file.read(reinterpret_cast<char*>(len_le), len_bytes);
  if (f.file.gcount() < len_bytes)
    fail(what, path, "truncated .npy header (the file ends inside the header length)");
  int64_t header_len = 0;
  for (int b = len_bytes - 1; b >= 0; --b) header_len = header_len * 256 + len_le[b];
  const int64_t prefix = kMagicBytes + 2 + len_bytes;
  if (header_len > kMaxHeaderBytes)
    fail(what, path, "malformed .npy header (declared length " + std::to_string(header_len) +
                         " bytes; at most " + std::to_string(kMaxHeaderBytes) + ")");
  if (prefix + header_len > file_bytes)
    fail(what, path, "truncated .npy header (declares " + std::to_string(header_len) +
                         " bytes, the file has " + std::to_string(file_bytes - prefix) + ")");
  std::string text(static_cast<size_t>(header_len), '\0');
  f.file.read(&text[0], header_len);
  if (f.file.gcount() < header_len) fail(what, path, "truncated .npy header");

  f.header = HeaderParser(text, what, path).parse();
  f.header.data_offset = prefix + header_len;
  try {
    f.numel = checked_numel(f.header.shape, itemsize(f.header.dtype), "shape");
  } catch (const InvalidArgument& e) {
    fail(what, path, "shape " + shape_text(f.header.shape) + " of " +
                         npy_dtype_name(f.header.dtype) + " would not fit in memory (" +
                         e.what() + ")");
  }
  const int64_t data_bytes = f.numel * itemsize(f.header.dtype);
  const int64_t have = file_bytes - f.header.data_offset;
  if (have < data_bytes)
    fail(what, path, "truncated .npy data (shape " + shape_text(f.header.shape) + " of " +
                         npy_dtype_name(f.header.dtype) + " needs " +
                         std::to_string(data_bytes) + " bytes, the file has " +
                         std::to_string(have) + ")");
  if (have > data_bytes)
    fail(what, path, "malformed .npy file (" + std::to_string(have - data_bytes) +
                         " bytes after the data that shape " + shape_text(f.header.shape) +
                         " describes)");
  return f;
}

// Reads the whole data block as raw elements of type Raw.
template <class Raw>
std::vector<Raw> read_raw(OpenNpy& f, const std::string& what, const std::string& path) {
  std::vector<Raw> raw(static_cast<size_t>(f.numel));
  f.file.read(reinterpret_cast<char*>(raw.data()),
              static_cast<std::streamsize>(f.numel * sizeof(Raw)));
  if (f.file.gcount() != static_cast<std::streamsize>(f.numel * sizeof(Raw)))
    fail(what, path, "could not read the .npy data");
  return raw;
}

// IEEE 754 binary16 -> binary64, exact: every half value (subnormals included) is a
// double. Layout: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);  // subnormal or zero
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

template <class Raw, class Out, class Convert>
Tensor<Out> convert(OpenNpy& f, const std::string& what, const std::string& path,
                    Convert convert_one) {
  const std::vector<Raw> raw = read_raw<Raw>(f, what, path);
  Tensor<Out> t;
  t.shape = f.header.shape;
  t.data.resize(raw.size());
  for (size_t e = 0; e < raw.size(); ++e) t.data[e] = convert_one(raw[e], e);
  return t;
}

// --- Writing ----------------------------------------------------------------------

std::string header_text(const char* descr, const Shape& shape, int* major) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t a = 0; a < shape.size(); ++a) dict += std::to_string(shape[a]) + ", ";
  if (shape.size() > 1) dict.resize(dict.size() - 2);  // (3,) keeps its comma; (2, 3) not
  else if (shape.size() == 1) dict.resize(dict.size() - 1);
  dict += "), }";
  // Version 1.0 stores the length in 16 bits; longer headers (very high rank) need 2.0.
  *major = dict.size() + 1 + 10 < 65536 ? 1 : 2;
  const size_t prefix = *major == 1 ? 10 : 12;
  const size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');  // data starts 64-byte aligned
  dict += '\n';
  return dict;
}

void write_atomic(const std::string& path, const std::string& prefix_bytes, const void* data,
                  size_t data_bytes) {
  // rename() would replace whatever `path` is: never let it replace a device, a pipe or a
  // directory (as root, `--out /dev/null` would otherwise turn /dev/null into a file).
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw RuntimeError("cannot write " + path +
                       ": it exists and is not a regular file (outputs are written to a "
                       "temporary file and renamed into place)");
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw RuntimeError("cannot write " + path + " (" + std::strerror(errno) + ")");
    }
    out.write(prefix_bytes.data(), static_cast<std::streamsize>(prefix_bytes.size()));
    if (data_bytes) out.write(static_cast<const char*>(data), static_cast<std::streamsize>(data_bytes));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw RuntimeError("cannot write " + path + " (write failed; disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw RuntimeError("cannot write " + path + " (" + reason + ")");
  }
}

template <class T>
void write_typed(const std::string& path, const Tensor<T>& x, const char* descr) {
  int major = 1;
  const std::string header = header_text(descr, x.shape, &major);
  std::string prefix(kMagic, kMagicBytes);
  prefix += static_cast<char>(major);
  prefix += '\0';
  const uint64_t len = header.size();
  const int len_bytes = major == 1 ? 2 : 4;
  for (int b = 0; b < len_bytes; ++b) prefix += static_cast<char>((len >> (8 * b)) & 0xff);
  prefix += header;
  write_atomic(path, prefix, x.data.data(), x.data.size() * sizeof(T));
}

}  // namespace

const char* npy_dtype_name(NpyDtype t) {
  switch (t) {
    case NpyDtype::float16: return "float16";
    case NpyDtype::float32: return "float32";
    case NpyDtype::float64: return "float64";
    case NpyDtype::uint8: return "uint8";
    case NpyDtype::boolean: return "bool";
    case NpyDtype::int32: return "int32";
    case NpyDtype::int64: return "int64";
  }
  return "?";
}

NpyHeader read_npy_header(const std::string& path, const std::string& what) {
  return open_npy(path, what).header;
}

Tensor<double> read_npy_float(const std::string& path, const std::string& what) {
  OpenNpy f = open_npy(path, what);
  switch (f.header.dtype) {
    case NpyDtype::float16:
      return convert<uint16_t, double>(f, what, path,
                                       [](uint16_t h, size_t) { return half_to_double(h); });
    case NpyDtype::float32:
      return convert<float, double>(f, what, path,
                                    [](float x, size_t) { return static_cast<double>(x); });
    case NpyDtype::float64: {
      Tensor<double> t;
      t.shape = f.header.shape;
      t.data = read_raw<double>(f, what, path);
      return t;
    }
    default:
      fail(what, path, std::string("dtype ") + npy_dtype_name(f.header.dtype) +
                           "; expected a floating-point dtype (float16, float32, float64)");
  }
}

Tensor<uint8_t> read_npy_mask(const std::string& path, const std::string& what) {
  OpenNpy f = open_npy(path, what);
  if (f.header.dtype != NpyDtype::boolean && f.header.dtype != NpyDtype::uint8)
    fail(what, path, std::string("dtype ") + npy_dtype_name(f.header.dtype) +
                         "; expected a mask of dtype bool or uint8 (1 = may attend / real token)");
  Tensor<uint8_t> t;
  t.shape = f.header.shape;
  t.data = read_raw<uint8_t>(f, what, path);
  for (size_t e = 0; e < t.data.size(); ++e) {
    if (t.data[e] > 1)
      fail(what, path, "mask value " + std::to_string(t.data[e]) + " at flat index " +
                           std::to_string(e) + "; a mask holds only 0 and 1");
  }
  return t;
}

Tensor<int64_t> read_npy_int(const std::string& path, const std::string& what) {
  OpenNpy f = open_npy(path, what);
  switch (f.header.dtype) {
    case NpyDtype::int64: {
      Tensor<int64_t> t;
      t.shape = f.header.shape;
      t.data = read_raw<int64_t>(f, what, path);
      return t;
    }
    case NpyDtype::int32:
      return convert<int32_t, int64_t>(f, what, path, [](int32_t x, size_t) { return int64_t{x}; });
    case NpyDtype::uint8:
      return convert<uint8_t, int64_t>(f, what, path, [](uint8_t x, size_t) { return int64_t{x}; });
    default:
      fail(what, path, std::string("dtype ") + npy_dtype_name(f.header.dtype) +
                           "; expected an integer dtype (int32, int64, uint8)");
  }
}

void write_npy(const std::string& path, const Tensor<double>& x) { write_typed(path, x, "<f8"); }
void write_npy(const std::string& path, const Tensor<float>& x) { write_typed(path, x, "<f4"); }
void write_npy(const std::string& path, const Tensor<int64_t>& x) { write_typed(path, x, "<i8"); }
void write_npy(const std::string& path, const Tensor<int32_t>& x) { write_typed(path, x, "<i4"); }
void write_npy(const std::string& path, const Tensor<uint8_t>& x, bool as_bool) {
  write_typed(path, x, as_bool ? "|b1" : "|u1");
}

void check_output_path(const std::string& path, const std::string& what) {
  require(!path.empty(), what, "\"\"", "must be a file path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    require(S_ISREG(st.st_mode), what, path,
            "must be a new or regular file (not a directory, device or pipe)");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  require(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), what, path,
          "its folder " + dir + " must exist");
  require(::access(dir.c_str(), W_OK) == 0, what, path, "its folder " + dir + " must be writable");
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_atomic(path, std::string(), text.data(), text.size());
}

}  // namespace sparseattn
