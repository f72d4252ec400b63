// contract §3 "Parameters beyond the sequence", §4 "any finite scale" and §5 exit codes,
// through the CLI, on the inputs that once failed: q, k, v float64 [1, 1, 16, 4].
// Each pattern parameter far beyond the sequence must give the result of its clamped
// value (computed here independently, by a predicate written in the test), exit 0, in a
// few MB; a float32 kernel must refuse a scale it cannot represent, naming --scale; every
// integer flag is decimal; every argument error exits 2.
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

constexpr const char* kInt64Max = "9223372036854775807";

// Peak resident memory of the largest child this process has waited for, in bytes. Every
// command in this file is small, so after each run it must stay below kMemoryLimit
// (before canonicalization: 0.5 GB for --block-size 65536, 6 GB for --dilation 16777216).
int64_t peak_child_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}
#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer's shadow memory and allocator add to every process's resident memory
// (measured: about 91 MB for these commands under `make sanitize`); 256 MB still catches an
// allocation in proportion to the parameter (0.5 GB and up).
constexpr int64_t kMemoryLimit = 256ll << 20;
#else
constexpr int64_t kMemoryLimit = 64ll << 20;
#endif

class Parameters : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    q_ = uniform_tensor({1, 1, 16, 4}, 1);
    k_ = uniform_tensor({1, 1, 16, 4}, 2);
    v_ = uniform_tensor({1, 1, 16, 4}, 3);
    write_npy(path("q.npy"), q_);
    write_npy(path("k.npy"), k_);
    write_npy(path("v.npy"), v_);
  }

  // Runs `attend` with `impl` and `flags`; expects exit 0 and o, lse within
  // atol + rtol·|ref| of the independent attention under `allowed` (scale 1/2).
  void expect_attend(const std::string& impl, const std::string& flags, const Allowed& allowed,
                     double atol, double rtol) {
    const std::string args = "attend --q " + path("q.npy") + " --k " + path("k.npy") + " --v " +
                             path("v.npy") + " --out " + path("o.npy") + " --lse " +
                             path("lse.npy") + " --impl " + impl + " --dtype float64 " + flags;
    SCOPED_TRACE(args);
    const RunResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(peak_child_rss_bytes(), kMemoryLimit);
    std::vector<double> o, lse;
    independent_attention(q_, k_, v_, Dims{1, 1, 16, 16, 4, 4}, 0.5, allowed, o, lse);
    const Tensor<double> got_o = read_npy_float(path("o.npy"), "o");
    const Tensor<double> got_lse = read_npy_float(path("lse.npy"), "lse");
    ASSERT_EQ(got_o.data.size(), o.size());
    ASSERT_EQ(got_lse.data.size(), lse.size());
    for (size_t e = 0; e < o.size(); ++e)
      EXPECT_LE(std::fabs(got_o.data[e] - o[e]), atol + rtol * std::fabs(o[e])) << "o[" << e << "]";
    for (size_t e = 0; e < lse.size(); ++e)
      EXPECT_LE(std::fabs(got_lse.data[e] - lse[e]), atol + rtol * std::fabs(lse[e]))
          << "lse[" << e << "]";
  }

  // The mask `mask --seq-len 16 <flags>` writes, as 0/1 per (query, key).
  std::vector<uint8_t> mask_of(const std::string& flags) {
    const RunResult r = run("mask --seq-len 16 --out " + path("m.npy") + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_LT(peak_child_rss_bytes(), kMemoryLimit);
    return read_npy_mask(path("m.npy"), "mask").data;
  }

  Tensor<double> q_, k_, v_;
};

const Allowed kDense = [](int64_t, int64_t, int64_t, int64_t) { return true; };

// Float64 references: to rounding. Float32 kernels: their declared kTolFloat32.
struct Impl {
  const char* name;
  double atol, rtol;
};
constexpr Impl kF64{"", 1e-12, 1e-12};
constexpr double kF32Atol = 2e-5, kF32Rtol = 2e-4;

// One block of 2^63 - 1 tokens over 16: nb = 1, block 0 global, i.e. dense attention.
TEST_F(Parameters, BigBirdBlockSizeNear2To63IsOneGlobalBlockDenseAttention) {
  const std::string flags = std::string("--pattern bigbird --block-size ") + kInt64Max;
  for (const char* impl : {"a1_dense_masked", "a2_sparse_rows", "a4_bigbird_blocks", "a5_flash_tiled"})
    expect_attend(impl, flags, kDense, kF64.atol, kF64.rtol);
  for (const char* impl : {"cpu_k05_bigbird_blocks", "cpu_k06_generic_tiles"})
    expect_attend(impl, flags, kDense, kF32Atol, kF32Rtol);
  EXPECT_EQ(mask_of(flags), std::vector<uint8_t>(16 * 16, 1));
}

// A block of 2^20 tokens over 16 is the block of 16: same mask, same output, a few MB.
TEST_F(Parameters, BigBirdBlockSizeBeyondTheSequenceEqualsBlockSizeSeqLen) {
  for (const char* b : {"16", "65536", "1048576", "4611686018427387904"}) {
    expect_attend("cpu_k05_bigbird_blocks", std::string("--pattern bigbird --block-size ") + b,
                  kDense, kF32Atol, kF32Rtol);
    EXPECT_EQ(mask_of(std::string("--pattern bigbird --num-random-blocks 3 --block-size ") + b),
              std::vector<uint8_t>(16 * 16, 1));
  }
}

// `info` names what was clamped, given and canonical value.
TEST_F(Parameters, InfoListsTheClampedParameters) {
  const RunResult r = run(std::string("info --seq-len 16 --pattern window --window ") + kInt64Max +
                          " --dilation 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"window 9223372036854775807 -> 3\""), std::string::npos) << r.out;
  const RunResult t = run("info --seq-len 16 --pattern bigbird --block-size 1048576");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("clamped       block_size 1048576 -> 16"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("density       1.000000"), std::string::npos) << t.out;
}

// num_random_blocks beyond the blocks: all that remain (nb = 4 at block 4: r >= 4 ≡ 4).
TEST_F(Parameters, NumRandomBlocksBeyondTheBlocksEqualsAllThatRemain) {
  const std::vector<uint8_t> four = mask_of("--pattern bigbird --block-size 4 --num-random-blocks 4");
  EXPECT_EQ(mask_of(std::string("--pattern bigbird --block-size 4 --num-random-blocks ") + kInt64Max), four);
  EXPECT_EQ(four, std::vector<uint8_t>(16 * 16, 1));  // 4 blocks: every block reachable
}

// window 2^63 - 1 covers every key: dense (and with --causal, causal dense).
TEST_F(Parameters, WindowNear2To63IsDenseInEveryWindowKernel) {
  const std::string w = std::string("--window ") + kInt64Max;
  expect_attend("a1_dense_masked", "--pattern window " + w, kDense, kF64.atol, kF64.rtol);
  expect_attend("a3_window_band", "--pattern window " + w, kDense, kF64.atol, kF64.rtol);
  for (const char* impl : {"cpu_k02_window_band", "cpu_k03_window_dilated", "cpu_k06_generic_tiles"})
    expect_attend(impl, "--pattern window " + w, kDense, kF32Atol, kF32Rtol);
  expect_attend("cpu_k02_window_band", "--pattern window --causal " + w,
                [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i; }, kF32Atol, kF32Rtol);
  // Longformer with the same window and a global token: still every key for every row.
  expect_attend("cpu_k04_longformer", "--pattern longformer --global 1 " + w, kDense, kF32Atol,
                kF32Rtol);
  expect_attend("cpu_k04_longformer", "--pattern longformer --causal --global 1 " + w,
                [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i; }, kF32Atol, kF32Rtol);
}

// Dilation >= 16 over 16 tokens: only the key itself is in range (o_i = v_i, lse_i = s_ii).
TEST_F(Parameters, DilationBeyondTheSequenceLeavesOnlyTheKeyItself) {
  const Allowed self = [](int64_t, int64_t, int64_t i, int64_t j) { return i == j; };
  for (const char* d : {"16", "16777216", "2147483648", kInt64Max}) {
    const std::string flags = std::string("--pattern window --window 2 --dilation ") + d;
    expect_attend("cpu_k03_window_dilated", flags, self, kF32Atol, kF32Rtol);
    expect_attend("a3_window_band", flags, self, kF64.atol, kF64.rtol);
    expect_attend("cpu_k04_longformer",
                  std::string("--pattern longformer --global 3 --window 5 --dilation ") + d,
                  [](int64_t, int64_t, int64_t i, int64_t j) { return i == j || i == 3 || j == 3; },
                  kF32Atol, kF32Rtol);
  }
}

// num_random beyond the keys: every key (contract §3: take all that remain).
TEST_F(Parameters, NumRandomBeyondTheKeysTakesAllThatRemain) {
  EXPECT_EQ(mask_of("--pattern random --num-random 1000000000000000"),
            std::vector<uint8_t>(16 * 16, 1));
  EXPECT_EQ(mask_of(std::string("--pattern random --causal --num-random ") + kInt64Max),
            mask_of("--pattern dense --causal"));
}

// contract §4: a float32 kernel cannot hold lse ≈ 5e300; it refuses before writing, naming
// --scale and the reason. The float64 oracle computes it.
TEST_F(Parameters, Float32KernelRefusesAScaleBeyondFloat32NamingScale) {
  write_npy(path("q2.npy"), uniform_tensor({1, 1, 2, 16}, 4));
  write_npy(path("k2.npy"), uniform_tensor({1, 1, 2, 16}, 5));
  write_npy(path("v2.npy"), uniform_tensor({1, 1, 2, 16}, 6));
  for (const std::string& qkv :
       {"--q " + path("q2.npy") + " --k " + path("k2.npy") + " --v " + path("v2.npy"),
        "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy")}) {
    for (const char* impl : {"cpu_k01_dense_flash", "cpu_k06_generic_tiles"}) {
      const RunResult r = run("attend " + qkv + " --out " + path("o.npy") + " --lse " +
                              path("lse.npy") + " --scale 1e300 --impl " + impl);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_EQ(r.err.rfind("sparseattn: error: invalid --scale = 1e+300: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find("float32"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("NaN"), std::string::npos) << r.err;
      EXPECT_FALSE(exists("o.npy"));
      EXPECT_FALSE(exists("lse.npy"));
      EXPECT_TRUE(no_temp_files());
    }
  }
  // The oracle: lse_i = log Σ_j exp(1e300 · <q_i, k_j>), i.e. max_j of the scaled scores
  // plus at most log 2 — finite, about 1e300.
  const RunResult r = run("attend --q " + path("q2.npy") + " --k " + path("k2.npy") + " --v " +
                          path("v2.npy") + " --out " + path("o.npy") + " --lse " + path("lse.npy") +
                          " --scale 1e300");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<double> q = uniform_tensor({1, 1, 2, 16}, 4), k = uniform_tensor({1, 1, 2, 16}, 5);
  const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
  for (int64_t i = 0; i < 2; ++i) {
    double m = -INFINITY;
    for (int64_t j = 0; j < 2; ++j) {
      double dot = 0.0;
      for (int64_t x = 0; x < 16; ++x) dot += q.data[i * 16 + x] * k.data[j * 16 + x];
      m = std::max(m, 1e300 * dot);
    }
    EXPECT_TRUE(std::isfinite(lse.data[i]));
    EXPECT_NEAR(lse.data[i], m, 1e-12 * std::fabs(m)) << "row " << i;
  }
}

// A tiny scale (below float32's smallest normal) is folded into q in float64: the float32
// kernel computes it (scores ≈ 0: uniform attention, lse = log 16).
TEST_F(Parameters, Float32KernelComputesATinyScale) {
  const RunResult r = run("attend --q " + path("q.npy") + " --k " + path("k.npy") + " --v " +
                          path("v.npy") + " --out " + path("o32.npy") + " --lse " +
                          path("lse32.npy") + " --scale 1e-300 --impl cpu_k01_dense_flash");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (double x : read_npy_float(path("lse32.npy"), "lse").data) EXPECT_NEAR(x, std::log(16.0), 1e-6);
  const Tensor<double> o = read_npy_float(path("o32.npy"), "o");
  for (int64_t x = 0; x < 4; ++x) {
    double mean = 0.0;
    for (int64_t j = 0; j < 16; ++j) mean += v_.data[j * 4 + x] / 16.0;
    for (int64_t i = 0; i < 16; ++i) EXPECT_NEAR(o.data[i * 4 + x], mean, 1e-6);
  }
}

// The fold itself must be float64 (registry/float32_guard.h): q = 1e38 and scale 1e-44
// are each a float32 (1e-44 only as a subnormal, 9.8e-45), but their product 1e-6 is exact
// only when formed in float64. D = 1, k = (0, 1e6), v = (0, 1): the scores are (0, 1), so
// o = e / (1 + e) and lse = log(1 + e). Folding float(q) * float(scale) gives scores
// (0, 0.98) and o = 0.7272: 190 times the float32 tolerance.
TEST_F(Parameters, TinyScaleFoldIsExactAtFloat32sEdge) {
  write_npy(path("q1.npy"), Tensor<double>({1, 1, 1, 1}, 1e38));
  Tensor<double> k({1, 1, 2, 1}, 0.0), v({1, 1, 2, 1}, 0.0);
  k.data[1] = 1e6;
  v.data[1] = 1.0;
  write_npy(path("k1.npy"), k);
  write_npy(path("v1.npy"), v);
  const double e = std::exp(1.0);
  for (const char* impl : {"cpu_k01_dense_flash", "cpu_k06_generic_tiles", "a1_dense_masked"}) {
    const RunResult r = run("attend --q " + path("q1.npy") + " --k " + path("k1.npy") + " --v " +
                            path("v1.npy") + " --out " + path("o1.npy") + " --lse " +
                            path("l1.npy") + " --scale 1e-44 --impl " + impl);
    ASSERT_EQ(r.exit_code, 0) << impl << ": " << r.err;
    const double o = read_npy_float(path("o1.npy"), "o").data[0];
    const double lse = read_npy_float(path("l1.npy"), "lse").data[0];
    EXPECT_NEAR(o, e / (1.0 + e), 2e-5 + 2e-4 * 0.7310586) << impl;  // 0.7310586
    EXPECT_NEAR(lse, std::log(1.0 + e), 2e-5 + 2e-4 * 1.3132617) << impl;  // 1.3132617
  }
}

// A subnormal scale is a finite real (contract §2.1: any finite scale): 5e-324 is accepted
// by attend and check, and every score rounds to 0 — uniform attention, lse = log 16.
TEST_F(Parameters, SubnormalScaleIsAFiniteReal) {
  const std::string qkv = "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  const RunResult r = run("attend " + qkv + " --out " + path("o.npy") + " --lse " +
                          path("lse.npy") + " --scale 5e-324");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (double x : read_npy_float(path("lse.npy"), "lse").data) EXPECT_NEAR(x, std::log(16.0), 1e-15);
  const Tensor<double> o = read_npy_float(path("o.npy"), "o");
  for (int64_t x = 0; x < 4; ++x) {
    double mean = 0.0;
    for (int64_t j = 0; j < 16; ++j) mean += v_.data[j * 4 + x] / 16.0;
    for (int64_t i = 0; i < 16; ++i) EXPECT_NEAR(o.data[i * 4 + x], mean, 1e-15);
  }
  const RunResult c = run("check " + qkv + " --candidate " + path("o.npy") + " --candidate-lse " +
                          path("lse.npy") + " --scale 4.9406564584124654e-324");
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  // Beyond float64's range is still refused (overflow, not underflow).
  const RunResult big = run("attend " + qkv + " --out " + path("o2.npy") + " --scale -1e309");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("invalid --scale = -1e309: must be a finite real number"),
            std::string::npos) << big.err;
}

// Integer flags are decimal (contract §5): a leading zero is still decimal, never octal.
TEST_F(Parameters, IntegerFlagsAreDecimalWithLeadingZeros) {
  auto mask30 = [&](const std::string& flags) {
    const RunResult r = run("mask --out " + path("m.npy") + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    return read_npy_mask(path("m.npy"), "mask");
  };
  const Tensor<uint8_t> ten = mask30("--seq-len 30 --pattern window --window 010");
  EXPECT_EQ(ten.data, mask30("--seq-len 30 --pattern window --window 10").data);
  int64_t row15 = 0;
  for (int64_t j = 0; j < 30; ++j) row15 += ten.data[15 * 30 + j];
  EXPECT_EQ(row15, 21);  // 2·10 + 1 keys, not 2·8 + 1
  EXPECT_EQ(mask30("--seq-len 30 --pattern window --window 08").data,
            mask30("--seq-len 30 --pattern window --window 8").data);
  EXPECT_EQ(mask30("--seq-len 030").shape, (Shape{30, 30}));
  EXPECT_EQ(mask30("--seq-len 16 --num-heads 02").shape, (Shape{2, 16, 16}));
  const std::string rnd = "--seq-len 30 --pattern random --num-random 2 --seed ";
  EXPECT_EQ(mask30(rnd + "010").data, mask30(rnd + "10").data);
  EXPECT_NE(mask30(rnd + "010").data, mask30(rnd + "8").data);
  // Not decimal: refused, exit 2, naming the flag and the text.
  for (const char* bad : {"--seq-len 0x10", "--seq-len 1e3", "--seq-len 16 --window 0o7 --pattern window",
                                 "--seq-len 16 --pattern random --num-random 1 --seed -01"}) {
    const RunResult r = run("mask --out " + path("bad.npy") + " " + std::string(bad));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("must be an integer in"), std::string::npos) << r.err;
    EXPECT_FALSE(exists("bad.npy"));
  }
}

// contract §5: one exit code, 2, for every argument error — CLI11's parse errors (which
// exit 101-114 by CLI11's own numbering) included; --help is a success.
TEST_F(Parameters, EveryArgumentErrorExitsTwo) {
  for (const std::string& args :
       {std::string(""), std::string("mask --out x.npy"), std::string("mask --seq-len 4 --out x.npy --bogus"),
        std::string("mask --seq-len abc --out x.npy"), std::string("nosuchcommand"),
        std::string("mask --seq-len 4 --out x.npy --pattern window --window -1"),
        std::string("mask --seq-len 99999999999999999999 --out x.npy"),
        std::string("attend --q nothere.npy --k k.npy --v v.npy --out o.npy")}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("sparseattn: error: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(run("--help").exit_code, 0);
  EXPECT_EQ(run("mask --help").exit_code, 0);
}

// --global's help says what contract §3 says: with --causal, global rows and columns obey
// causality too.
TEST_F(Parameters, GlobalHelpStatesCausality) {
  const RunResult r = run("mask --help");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("global rows and columns obey causality"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sparseattn::testing_cli
