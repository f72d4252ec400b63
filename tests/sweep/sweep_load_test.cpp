// Checks contract §4.11 (timing only what passed; a sweep's clocks on a busy machine) for
// `sparseattn sweep`'s engine: api/sweep.h's honest-sweep rules on synthetic inputs: /proc/stat's procs_running
// parsed, the other runnable threads counted (the reader left out), the busy verdict for
// given loads, cores and threads (which clock the fits read), the default thread count,
// the fits read from that clock beside the FLOP count's slope, and the report's words.
// No timing is asserted: the figures of a busy machine are docs/benchmarks.md's.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "api/sweep.h"
#include "core/error.h"
#include "registry/registry.h"

namespace sparseattn::api {
namespace {

TEST(SweepLoad, ProcsRunningIsReadFromProcStatText) {
  const std::string stat =
      "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 50 0 25 500 0 0 0 0 0 0\nintr 12 0 0\n"
      "ctxt 4242\nbtime 1700000000\nprocesses 321\nprocs_running 3\nprocs_blocked 0\n";
  EXPECT_EQ(parse_procs_running(stat), 3);
  EXPECT_EQ(parse_procs_running("cpu 1 2 3\nprocs_blocked 0\n"), -1);  // no such line
  EXPECT_EQ(parse_procs_running("procs_running x\n"), -1);             // not a count
  EXPECT_EQ(parse_procs_running("procs_running \n"), -1);
  EXPECT_EQ(parse_procs_running("procs_running 12\n"), 12);
}

TEST(SweepLoad, OtherRunnableThreadsLeaveTheReaderOut) {
  // Each sample counts the reading thread: 1, 2, 3 runnable are 0, 1, 2 others.
  EXPECT_DOUBLE_EQ(other_runnable({1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(other_runnable({2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(other_runnable({0, 1}), 0.0);   // never below zero
  EXPECT_DOUBLE_EQ(other_runnable({-1, 4}), 3.0);  // an unreadable sample is skipped
  EXPECT_TRUE(std::isnan(other_runnable({})));
  // This machine's /proc/stat (Linux): readable, each sample counts at least the reader.
  const std::vector<int> now = sample_procs_running(2);
  ASSERT_EQ(now.size(), 2u);
  for (int p : now) EXPECT_GE(p, 1);
}

TEST(SweepLoad, BusyWhenOtherThreadsWouldShareTheSweepsCores) {
  // An idle 2-core machine, 2 threads: wall time.
  LoadVerdict v = judge_load(0.2, NAN, 2, 2);
  EXPECT_FALSE(v.busy);
  EXPECT_EQ(v.measure, TimeMeasure::wall);
  EXPECT_EQ(v.source, "procs_running");
  // One busy neighbour beside 2 threads on 2 cores: busy, CPU time.
  v = judge_load(1.0, NAN, 2, 2);
  EXPECT_TRUE(v.busy);
  EXPECT_EQ(v.measure, TimeMeasure::cpu);
  // The same neighbour beside 1 thread: a core is left, wall time holds.
  v = judge_load(1.0, NAN, 2, 1);
  EXPECT_FALSE(v.busy);
  // Two neighbours beside 1 thread: busy again.
  EXPECT_TRUE(judge_load(2.0, NAN, 2, 1).busy);
  // The threshold, cores - threads + 0.5, is strict.
  EXPECT_FALSE(judge_load(1.5, NAN, 2, 1).busy);
  EXPECT_TRUE(judge_load(1.51, NAN, 2, 1).busy);
  // procs_running decides over the load average; the load average where it is unknown.
  EXPECT_FALSE(judge_load(0.0, 9.0, 2, 2).busy);
  v = judge_load(NAN, 3.5, 2, 1);
  EXPECT_TRUE(v.busy);
  EXPECT_EQ(v.source, "load average");
  EXPECT_DOUBLE_EQ(v.others, 3.5);
  v = judge_load(NAN, NAN, 2, 2);
  EXPECT_FALSE(v.busy);
  EXPECT_EQ(v.source, "none");
  EXPECT_EQ(v.measure, TimeMeasure::wall);
}

TEST(SweepLoad, TheDefaultThreadCountLeavesTheBusyCoresAlone) {
  EXPECT_EQ(auto_threads(1.0, 2), 1);  // 2 cores, one busy neighbour: 1 thread
  EXPECT_EQ(auto_threads(0.2, 2), 2);  // idle: every core
  EXPECT_EQ(auto_threads(0.6, 2), 1);  // round(1.4)
  EXPECT_EQ(auto_threads(7.0, 2), 1);  // never below one
  EXPECT_EQ(auto_threads(0.0, 16), 16);
  EXPECT_EQ(auto_threads(NAN, 4), 4);  // nothing known: every core
  // And that count is not judged busy under the load it was chosen for.
  EXPECT_FALSE(judge_load(1.0, NAN, 2, auto_threads(1.0, 2)).busy);
}

// A series whose wall times are a busy machine's time slices (two values, whatever n) and
// whose CPU times grow as n: the fit must read the clock the verdict chose.
SweepResult synthetic(bool busy) {
  SweepResult r;
  const double wall[] = {15.9e-3, 23.7e-3, 15.9e-3, 23.7e-3};
  int i = 0;
  for (int64_t n : {1024, 2048, 4096, 8192}) {
    SweepPoint p;
    p.impl = "cpu_k06_generic_tiles";
    p.pattern = "pattern";
    p.seq_len = n;
    p.validated = true;
    p.median_s = wall[i++];
    p.cpu_median_s = 2e-6 * static_cast<double>(n);  // slope 1
    p.flops = 4.0 * 513.0 * 64.0 * static_cast<double>(n);  // slope 1
    p.dense_flops = 4.0 * 64.0 * static_cast<double>(n * n);
    r.points.push_back(p);
  }
  r.load = judge_load(busy ? 2.0 : 0.0, NAN, 2, 2);
  return r;
}

TEST(SweepLoad, FitsReadTheClockTheVerdictChoseBesideTheFlopSlope) {
  const nlohmann::json busy = sweep_fits(synthetic(true), 0);
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_EQ(busy[0]["measure"], "cpu");
  EXPECT_NEAR(busy[0]["slope"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(busy[0]["flop_slope"].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(busy[0]["points"], 4);
  // Not busy: the wall times are fitted, and their slope is the slices' (hand-computed:
  // log-log least squares of 15.9, 23.7, 15.9, 23.7 ms at 2^10..2^13 is 0.1152).
  const nlohmann::json idle = sweep_fits(synthetic(false), 0);
  EXPECT_EQ(idle[0]["measure"], "wall");
  EXPECT_NEAR(idle[0]["slope"].get<double>(), 0.1152, 5e-4);
  // The dense baseline's FLOP slope is its dense count's: 2.
  SweepResult d = synthetic(true);
  for (SweepPoint& p : d.points) p.pattern = "dense";
  EXPECT_NEAR(sweep_fits(d, 0)[0]["flop_slope"].get<double>(), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(fit_seconds(d.points[0], TimeMeasure::cpu), d.points[0].cpu_median_s);
  EXPECT_DOUBLE_EQ(fit_seconds(d.points[0], TimeMeasure::wall), d.points[0].median_s);
}

TEST(SweepLoad, TheReportSaysWhichClockAndWarnsInOneLine) {
  const LoadVerdict idle = judge_load(0.25, NAN, 2, 1);
  EXPECT_EQ(load_line(idle),
            "slopes fitted on wall time: 0.2 other runnable threads (procs_running) beside 1 "
            "sweep thread on 2 cores");
  EXPECT_EQ(load_warning(idle), "");
  const LoadVerdict busy = judge_load(3.0, NAN, 2, 2);
  EXPECT_EQ(load_line(busy),
            "slopes fitted on CPU time: 3.0 other runnable threads (procs_running) beside 2 "
            "sweep threads on 2 cores: busy");
  const std::string w = load_warning(busy);
  EXPECT_EQ(w,
            "warning: busy machine: 3.0 other runnable threads want the 2 cores beside the "
            "sweep's 2; wall times count the scheduler's slices, so the slopes are fitted on CPU "
            "time, which with 2 threads counts their spinning at barriers too unless "
            "OMP_WAIT_POLICY=passive (or --threads 1)");
  EXPECT_EQ(w.find('\n'), std::string::npos);  // one line
  EXPECT_EQ(load_warning(judge_load(2.0, NAN, 2, 1)),
            "warning: busy machine: 2.0 other runnable threads want the 2 cores beside the "
            "sweep's 1; wall times count the scheduler's slices, so the slopes are fitted on CPU "
            "time");
  const nlohmann::json j = load_json(busy);
  EXPECT_EQ(j["busy"], true);
  EXPECT_EQ(j["fit_measure"], "cpu");
  EXPECT_EQ(j["source"], "procs_running");
  EXPECT_EQ(j["others_runnable"], 3.0);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(load_json(judge_load(NAN, NAN, 2, 1))["others_runnable"], nullptr);
}

TEST(SweepLoad, ARealSweepRecordsBothClocksOnItsThreadsAndRestoresTheCallers) {
  SweepConfig c;
  c.spec.kind = PatternKind::window;
  c.spec.window = 8;
  c.seq_lens = {64, 128};
  c.head_dim = 16;
  c.repeats = 2;
  c.kernels = {&find_kernel("cpu_k06_generic_tiles")};
  c.threads = 1;
  omp_set_num_threads(2);
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(omp_get_max_threads(), 2);  // the caller's count is back
  EXPECT_EQ(r.load.threads, 1);
  EXPECT_EQ(r.load.cores, omp_get_num_procs());
  EXPECT_EQ(r.load.source, "procs_running");
  ASSERT_EQ(r.points.size(), 2u);
  for (const SweepPoint& p : r.points) {
    ASSERT_TRUE(p.validated) << p.failure;
    EXPECT_EQ(p.repeats, 2);
    EXPECT_GT(p.cpu_median_s, 0.0);
    EXPECT_LE(p.cpu_min_s, p.cpu_median_s);
    EXPECT_LE(p.cpu_median_s, p.cpu_max_s);
    EXPECT_GT(p.median_s, 0.0);
    EXPECT_GE(p.others_runnable, 0.0);
  }
  c.threads = 0;
  EXPECT_THROW(run_sweep(c), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn::api
