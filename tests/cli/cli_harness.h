// Serves the command-line tests of contract §2, §3 and §5.
// Runs the built `sparseattn` binary (its path comes from CMake as SPARSEATTN_BIN) on
// files in a fresh temp directory, and captures exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <vector>
#include <cmath>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "core/tensor.h"
#include "pattern/prng.h"

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

// An attention written in the tests straight from contract §2-3, shared by the CLI tests:
// a predicate per pattern and a two-pass softmax, no library code.
using Allowed = std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)>;

struct Dims {
  int64_t B, H, Lq, Lk, D, Dv;
};

// contract §2 written out: s_ij = scale <q_i, k_j>; lse_i = log sum exp over allowed j;
// o_i = sum exp(s_ij - lse_i) v_j; o_i = 0 and lse_i = -inf when nothing is allowed.
inline void independent_attention(const Tensor<double>& q, const Tensor<double>& k,
                           const Tensor<double>& v, const Dims& d, double scale,
                           const Allowed& allowed, std::vector<double>& o,
                           std::vector<double>& lse) {
  o.assign(static_cast<size_t>(d.B * d.H * d.Lq * d.Dv), 0.0);
  lse.assign(static_cast<size_t>(d.B * d.H * d.Lq), -INFINITY);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t i = 0; i < d.Lq; ++i) {
        const double* qi = &q.data[((b * d.H + h) * d.Lq + i) * d.D];
        std::vector<double> s(static_cast<size_t>(d.Lk), -INFINITY);
        double m = -INFINITY;
        for (int64_t j = 0; j < d.Lk; ++j) {
          if (!allowed(b, h, i, j)) continue;
          const double* kj = &k.data[((b * d.H + h) * d.Lk + j) * d.D];
          double dot = 0.0;
          for (int64_t x = 0; x < d.D; ++x) dot += qi[x] * kj[x];
          s[j] = scale * dot;
          m = std::max(m, s[j]);
        }
        if (m == -INFINITY) continue;
        double l = 0.0;
        for (int64_t j = 0; j < d.Lk; ++j)
          if (s[j] != -INFINITY) l += std::exp(s[j] - m);
        const int64_t row = (b * d.H + h) * d.Lq + i;
        lse[row] = m + std::log(l);
        for (int64_t j = 0; j < d.Lk; ++j) {
          if (s[j] == -INFINITY) continue;
          const double p = std::exp(s[j] - m) / l;
          for (int64_t x = 0; x < d.Dv; ++x)
            o[row * d.Dv + x] += p * v.data[((b * d.H + h) * d.Lk + j) * d.Dv + x];
        }
      }
}

}  // namespace sparseattn::testing_cli
