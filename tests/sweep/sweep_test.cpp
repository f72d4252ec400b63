// Checks contract §4.2 (only a passing kernel is timed) and §5.2 for `sparseattn sweep`'s engine.
// The --seq-len parser (every accepted form, every refused one), the log-log fit on
// analytic data, and the sweep itself with registry-entry test doubles: a wrong kernel is
// reported with the checker's reason and never timed (called once, for validation, and
// not at larger n), a kernel without its device is skipped with the reason, and a kernel
// whose next point would exceed --max-seconds stops growing n with a note.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "api/alloc_tracker.h"
#include "api/seq_range.h"
#include "cli/sweep.h"
#include "core/error.h"
#include "registry/registry.h"
#include "tests/api/kernel_doubles.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)
namespace {

using V = std::vector<int64_t>;

TEST(SeqLens, RangesListsAndSingleValues) {
  EXPECT_EQ(parse_seq_lens("--seq-len", "1024:65536"), (V{1024, 2048, 4096, 8192, 16384, 32768, 65536}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "1000:5000"), (V{1000, 1024, 2048, 4096, 5000}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "64:256"), (V{64, 128, 256}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "1:4"), (V{1, 2, 4}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "3:3"), (V{3}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "5:7"), (V{5, 7}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "1024,3000,8192"), (V{1024, 3000, 8192}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "4096"), (V{4096}));
  EXPECT_EQ(parse_seq_lens("--seq-len", "010"), (V{10}));  // decimal, never octal
  EXPECT_EQ(parse_seq_lens("--seq-len", "08:010"), (V{8, 10}));
  EXPECT_TRUE(is_seq_len_sweep("512:512"));
  EXPECT_TRUE(is_seq_len_sweep("1,2"));
  EXPECT_FALSE(is_seq_len_sweep("512"));
}

TEST(SeqLens, MalformedTextIsRefusedNamingTheFlag) {
  for (const std::string bad : {"", "0", "-1", "+5", "a", "1e3", " 8", "8 ", "1024:", ":2048", "4:2",
                                "0:8", "1:2:4", "3,2", "2,2", "1,,2", "1,", ",1", "1, 2",
                                "99999999999999999999", "0x10", "1:0x10"}) {
    SCOPED_TRACE("'" + bad + "'");
    try {
      parse_seq_lens("--seq-len", bad);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "--seq-len");
      EXPECT_EQ(std::string(e.what()).rfind("invalid --seq-len = " + bad + ": ", 0), 0u) << e.what();
    }
  }
}

TEST(LogLogFit, RecoversExponentsOfAnalyticLaws) {
  std::vector<std::pair<double, double>> linear, quadratic, mixed;
  for (double n = 1024; n <= 65536; n *= 2) {
    linear.emplace_back(n, 3e-7 * n);
    quadratic.emplace_back(n, 5e-10 * n * n);
  }
  const LogLogFit l = fit_loglog(linear), q = fit_loglog(quadratic);
  EXPECT_EQ(l.points, 7);
  EXPECT_NEAR(l.slope, 1.0, 1e-12);
  EXPECT_NEAR(l.intercept, std::log(3e-7), 1e-9);
  EXPECT_NEAR(q.slope, 2.0, 1e-12);
  EXPECT_NEAR(q.intercept, std::log(5e-10), 1e-9);
  // Non-positive and non-finite points are skipped, not fitted.
  std::vector<std::pair<double, double>> dirty = quadratic;
  dirty.emplace_back(3000, 0.0);
  dirty.emplace_back(5000, -1.0);
  dirty.emplace_back(7000, NAN);
  dirty.emplace_back(0, 1.0);
  const LogLogFit d = fit_loglog(dirty);
  EXPECT_EQ(d.points, 7);
  EXPECT_NEAR(d.slope, 2.0, 1e-12);
  // n^1.5 over points that are not powers of two.
  for (double n : {1000.0, 3000.0, 7777.0}) mixed.emplace_back(n, 2.0 * std::pow(n, 1.5));
  EXPECT_NEAR(fit_loglog(mixed).slope, 1.5, 1e-12);
  const LogLogFit one = fit_loglog({{1024, 1.0}});
  EXPECT_EQ(one.points, 1);
  EXPECT_EQ(one.slope, 0.0);
  EXPECT_EQ(fit_loglog({}).points, 0);
}

// --- Registry-entry test doubles -----------------------------------------------------

using testing_doubles::double_of;
using testing_doubles::generic;

int g_wrong_calls = 0;
int g_slow_calls = 0;

// The right answer, then one element of o nudged by 1e-3 (far outside float32's tolerance).
void run_wrong(const Problem& p, Output& out) {
  ++g_wrong_calls;
  generic().run(p, out);
  out.o32.data[out.o32.numel() / 2] += 1e-3f;
}

void run_no_device(const Problem&, Output&) {
  throw RuntimeError("no CUDA device: cudaGetDeviceCount found 0 devices (test double needs one)");
}

// Correct, and slow: 0.3 s at n = 64, growing as n².
void run_slow(const Problem& p, Output& out) {
  ++g_slow_calls;
  generic().run(p, out);
  const double n = static_cast<double>(p.shape.seq_len_q);
  std::this_thread::sleep_for(std::chrono::duration<double>(0.3 * (n / 64) * (n / 64)));
}

SweepConfig small_config() {
  SweepConfig c;
  c.spec.kind = PatternKind::window;
  c.spec.window = 8;
  c.num_heads = 2;
  c.head_dim = 16;
  c.seq_lens = {64, 128};
  c.repeats = 3;
  c.heap = heap_probe();  // the counter this test links (sparseattn_alloc_tracker)
  return c;
}

const SweepPoint* find_point(const SweepResult& r, const std::string& impl, int64_t n) {
  for (const SweepPoint& p : r.points)
    if (p.impl == impl && p.seq_len == n) return &p;
  return nullptr;
}

TEST(Sweep, AKernelFailingValidationIsReportedAndNeverTimed) {
  const Kernel wrong = double_of("test_wrong_kernel", &run_wrong);
  SweepConfig c = small_config();
  c.kernels = {&wrong, &generic()};
  g_wrong_calls = 0;
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(g_wrong_calls, 1);  // the validation call only: not timed, not run at n = 128
  const SweepPoint* bad = find_point(r, "test_wrong_kernel", 64);
  ASSERT_NE(bad, nullptr);
  EXPECT_FALSE(bad->validated);
  EXPECT_TRUE(bad->oracle_full);
  EXPECT_EQ(bad->repeats, 0);
  EXPECT_NE(bad->failure.find("o: "), std::string::npos) << bad->failure;
  EXPECT_EQ(find_point(r, "test_wrong_kernel", 128), nullptr);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("test_wrong_kernel: FAILED validation at seq_len 64") == 0;
  EXPECT_TRUE(noted);
  // The JSON says so: validated false, no time, the reason.
  const nlohmann::json pts = points_json(r.points);
  for (const auto& p : pts)
    if (p["impl"] == "test_wrong_kernel") {
      EXPECT_EQ(p["validated"], false);
      EXPECT_TRUE(p["median_s"].is_null());
      EXPECT_FALSE(p["failure"].get<std::string>().empty());
    }
  // The honest kernel beside it: both points validated and timed `repeats` times.
  for (int64_t n : {64, 128}) {
    const SweepPoint* ok = find_point(r, "cpu_k06_generic_tiles", n);
    ASSERT_NE(ok, nullptr) << n;
    EXPECT_TRUE(ok->validated);
    EXPECT_EQ(ok->repeats, 3);
    EXPECT_GT(ok->median_s, 0.0);
    EXPECT_LE(ok->min_s, ok->median_s);
    EXPECT_LE(ok->median_s, ok->max_s);
    EXPECT_GT(ok->peak_bytes, 0);  // its outputs at least: o [2, n, 16] float32
    EXPECT_GE(ok->peak_bytes, 2 * n * 16 * 4);
    EXPECT_DOUBLE_EQ(ok->dense_flops, 4.0 * 2 * n * n * 16);
  }
  EXPECT_NE(points_csv(r.points).find("test_wrong_kernel,pattern,64,0,,,,"), std::string::npos);
}

// Wrong only from seq_len 128 on: timed at 64 (validation + `repeats` calls), at 128 called
// once, for validation, and never again — not timed there, not run at 256. And a kernel that
// throws (not a missing device) is a failure, never timed.
int g_late_calls = 0;
void run_wrong_from_128(const Problem& p, Output& out) {
  ++g_late_calls;
  generic().run(p, out);
  if (p.shape.seq_len_q >= 128) out.o32.data[0] += 1e-3f;
}

TEST(Sweep, AKernelThatFailsAtALargerSeqLenIsNotTimedThere) {
  const Kernel late = double_of("test_late_wrong", &run_wrong_from_128);
  const Kernel throws = double_of("test_throws", [](const Problem&, Output&) {
    throw std::runtime_error("out of scratch memory");
  });
  SweepConfig c = small_config();
  c.seq_lens = {64, 128, 256};
  c.kernels = {&late, &throws};
  g_late_calls = 0;
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(g_late_calls, 1 + 3 + 1);  // 64: validated and timed 3 times; 128: validated only
  EXPECT_EQ(r.failures, 2);
  const SweepPoint* ok = find_point(r, "test_late_wrong", 64);
  ASSERT_NE(ok, nullptr);
  EXPECT_TRUE(ok->validated);
  EXPECT_EQ(ok->repeats, 3);
  const SweepPoint* bad = find_point(r, "test_late_wrong", 128);
  ASSERT_NE(bad, nullptr);
  EXPECT_FALSE(bad->validated);
  EXPECT_EQ(bad->repeats, 0);
  EXPECT_EQ(bad->median_s, 0.0);
  EXPECT_EQ(find_point(r, "test_late_wrong", 256), nullptr);
  const SweepPoint* threw = find_point(r, "test_throws", 64);
  ASSERT_NE(threw, nullptr);
  EXPECT_FALSE(threw->validated);
  EXPECT_EQ(threw->repeats, 0);
  EXPECT_EQ(threw->failure, "kernel threw: out of scratch memory");
  EXPECT_EQ(find_point(r, "test_throws", 128), nullptr);
  // Only validated points enter the fits.
  for (const nlohmann::json& f : sweep_fits(r, 0))
    if (f["impl"] == "test_late_wrong") EXPECT_EQ(f["points"], 1);
}

TEST(Sweep, SampledRowsCatchAWrongKernelAboveTheFullOracleSize) {
  // n = 2049: seq_len² just above api::kFullOracleMaxPairs, so the oracle is sampled
  // rows. The double nudges the first element of every row, so every sampled row sees it.
  const Kernel wrong = double_of("test_wrong_rows", [](const Problem& p, Output& out) {
    generic().run(p, out);
    const int64_t rows = out.o32.numel() / p.shape.head_dim_v;
    for (int64_t r = 0; r < rows; ++r) out.o32.data[r * p.shape.head_dim_v] += 1e-3f;
  });
  SweepConfig c = small_config();
  c.num_heads = 1;
  c.seq_lens = {2049};
  c.kernels = {&wrong};
  const SweepResult r = run_sweep(c);
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_FALSE(r.points[0].validated);
  EXPECT_FALSE(r.points[0].oracle_full);
  EXPECT_EQ(r.failures, 1);
}

TEST(Sweep, AKernelWithoutItsDeviceIsSkippedWithTheReason) {
  const Kernel cuda = double_of("test_cuda_kernel", &run_no_device);
  SweepConfig c = small_config();
  c.kernels = {&cuda};
  const SweepResult r = run_sweep(c);
  EXPECT_TRUE(r.points.empty());
  EXPECT_EQ(r.failures, 0);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].first, "test_cuda_kernel");
  EXPECT_NE(r.skipped[0].second.find("no CUDA device"), std::string::npos);
}

TEST(Sweep, GrowthStopsWhenTheNextPointWouldExceedMaxSeconds) {
  // At n = 64 a call takes >= 0.3 s; with one point the law is taken as n², so n = 128 is
  // predicted at >= 1.2 s per call, x (1 + 1 repeat) calls > 1.5 s: not run. (The honest
  // kernel beside it would need 0.19 s per call at n = 64 to be stopped too; a loaded
  // machine has been seen to take 50 ms.)
  const Kernel slow = double_of("test_slow_kernel", &run_slow);
  SweepConfig c = small_config();
  c.kernels = {&slow, &generic()};
  c.repeats = 1;
  c.max_seconds = 1.5;
  g_slow_calls = 0;
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(g_slow_calls, 2);  // validation + one timed call, at n = 64 only
  EXPECT_NE(find_point(r, "test_slow_kernel", 64), nullptr);
  EXPECT_EQ(find_point(r, "test_slow_kernel", 128), nullptr);
  EXPECT_NE(find_point(r, "cpu_k06_generic_tiles", 128), nullptr)  // the others go on
      << ::testing::PrintToString(r.notes);
  bool noted = false;
  for (const std::string& n : r.notes)
    noted |= n.find("test_slow_kernel: stopped at seq_len 64: seq_len 128 would take") == 0 &&
             n.find("> --max-seconds 1.5") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Sweep, TheDenseBaselineRunsOnTheDensePatternAndFitsAreReported) {
  SweepConfig c = small_config();
  c.seq_lens = {64, 128, 256};
  c.kernels = {&generic()};
  c.dense_baseline = &find_kernel("cpu_k01_dense_flash");
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(r.failures, 0);
  for (int64_t n : {64, 128, 256}) {
    const SweepPoint* d = nullptr;
    for (const SweepPoint& p : r.points)
      if (p.pattern == "dense" && p.seq_len == n) d = &p;
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(d->validated);
    EXPECT_DOUBLE_EQ(d->density, 1.0);
    EXPECT_DOUBLE_EQ(d->flops, d->dense_flops);
  }
  const nlohmann::json fits = sweep_fits(r, 0);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0]["impl"], "cpu_k06_generic_tiles");
  EXPECT_EQ(fits[0]["points"], 3);
  EXPECT_TRUE(fits[0]["slope"].is_number());
  EXPECT_EQ(fits[1]["pattern"], "dense");
  // Points below fit_from leave the fit, not the list: still one entry per series.
  const nlohmann::json from128 = sweep_fits(r, 128);
  ASSERT_EQ(from128.size(), 2u);
  EXPECT_EQ(from128[0]["points"], 2);
  EXPECT_EQ(sweep_fits(r, 1 << 20)[0]["slope"], nullptr);
}

TEST(Sweep, BadConfigsAreRefusedNamingTheFlag) {
  SweepConfig c = small_config();
  c.kernels = {&generic()};
  c.repeats = 0;
  EXPECT_THROW(run_sweep(c), InvalidArgument);
  c.repeats = 1;
  c.max_seconds = 0;
  EXPECT_THROW(run_sweep(c), InvalidArgument);
  c.max_seconds = 1;
  c.seq_lens = {128, 64};
  EXPECT_THROW(run_sweep(c), InvalidArgument);
  c.seq_lens = {};
  EXPECT_THROW(run_sweep(c), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn::cli
