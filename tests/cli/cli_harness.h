// Serves the command-line tests of contract §2, §3 and §5.
// Runs the built `sparseattn` binary (its path comes from CMake as SPARSEATTN_BIN) on
// files in a fresh temp directory, and captures exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/tensor.h"
#include "reference/pattern/prng.h"

namespace sparseattn::testing_cli {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// One temp directory per test; removed at the end.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("sparseattn_cli_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" +
            info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // `args` is appended to the binary's path as shell words (paths here have no spaces).
  RunResult run(const std::string& args) const {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = std::string(SPARSEATTN_BIN) + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  bool exists(const std::string& name) const { return std::filesystem::exists(dir_ / name); }

  // No "<file>.tmp-<pid>" left behind by an atomic writer.
  bool no_temp_files() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().filename().string().find(".tmp-") != std::string::npos) return false;
    return true;
  }

  static std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

// Uniform values in [-1, 1) from the project's counter-based PRNG, keyed by `stream`.
inline Tensor<double> uniform_tensor(const Shape& shape, uint64_t stream) {
  Tensor<double> t(shape);
  const uint64_t key = prng_stream_key(12345, stream, 0);
  for (int64_t e = 0; e < t.numel(); ++e)
    t.data[e] = static_cast<double>(prng_bits(key, static_cast<uint64_t>(e)) >> 11) /
                    4503599627370496.0 - 1.0;  // 2^52: [0, 2) - 1
  return t;
}

}  // namespace sparseattn::testing_cli
