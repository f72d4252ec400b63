// What the three libFuzzer targets share: a private scratch folder for the files they
// write (the .npy reader and the `check` command take paths, not bytes), and the rule
// every target enforces (contract §5): bad input is refused with the project's own error
// types, InvalidArgument (a bad argument or file) or RuntimeError (an environment
// failure); any other exception escapes the target and libFuzzer reports it as a crash,
// as it does for a sanitizer report, an abort, a timeout or an allocation over
// -malloc_limit_mb.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace sparseattn::fuzz {

// A folder of its own per fuzzing process (several jobs may share one machine), removed
// at exit unless SPARSEATTN_FUZZ_PRINT is set (replaying a crash keeps its files).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "sparseattn_fuzz_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    if (std::getenv("SPARSEATTN_FUZZ_PRINT") == nullptr)
      std::atexit([] { std::filesystem::remove_all(scratch_dir()); });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline std::string scratch_path(const std::string& name) { return (scratch_dir() / name).string(); }

// Writes `size` bytes to `path` (plain write: the fuzzer is the only reader).
inline void write_bytes(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) {
    std::perror(path.c_str());
    std::abort();
  }
}

// A broken invariant: print it and abort, so libFuzzer saves the input as a crash.
[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

#define FUZZ_REQUIRE(cond, detail)                   \
  do {                                                \
    if (!(cond)) ::sparseattn::fuzz::fail(#cond, detail); \
  } while (0)

}  // namespace sparseattn::fuzz
