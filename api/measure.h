// The measurement harness: check a kernel against the oracle, then time it — and only
// then (contract §4.11; §4.7: a kernel is timed only after its output has passed, §4.2).
// Every program that times a kernel goes through measure(): bench_cpu, bench_cuda,
// `sparseattn sweep`, `sparseattn demo`, `sparseattn demo-real` and Python's time_impl.
//
//   measure(kernel, problem, oracle, plan):
//     1. one call of kernel.run(problem), its extra heap counted when plan.heap is given;
//     2. its output checked with the one checker (core/check.h) at the kernel's registry
//        tolerance: o and lse against the oracle (on the kernel's rounded inputs for
//        float16/bfloat16, oracle_for), on the heads both cover;
//     3. an exact kernel that failed is refused: timed = false, seconds empty, no further
//        call. An approximation (registry exact = false, contract §4.8) is measured, not
//        gated: o only, its error reported, then timed;
//     4. plan.warmup untimed calls, then up to plan.repeats timed calls (steady clock around
//        run(); the stop rules below), or the caller's own timed section (Google
//        Benchmark's loop, CUDA events) when plan.timed_section is set.
// Exceptions from the kernel propagate (each caller reports them its own way).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/oracle.h"
#include "core/check.h"
#include "registry/registry.h"

namespace sparseattn::api {

// How the checked call's extra heap is counted: api/alloc_tracker.h's heap_probe() in a
// program that links sparseattn_alloc_tracker; empty (not counted) elsewhere.
struct HeapProbe {
  int64_t (*in_use)() = nullptr;
  int64_t (*peak)() = nullptr;
  void (*reset_peak)() = nullptr;
};

struct TimingPlan {
  int64_t repeats = 1;  // timed calls, >= 1 (fewer when a stop rule ends them)
  int64_t warmup = 0;   // untimed calls between the checked call and the timed ones, >= 0
  // The checked call's own time is the first sample once it has passed (the demo and the
  // real-data job: their serial references take seconds a call, and a separate checked
  // call would double the job). Its clock reading is dropped when it fails.
  bool time_checked_call = false;
  double stop_after_total_s = INFINITY;  // no further timed call once the samples sum to this
  double stop_after_call_s = INFINITY;   // no further timed call after one longer than this
  // One Output for every call (the CPU entries keep buffers of the right shape, so a call
  // times the kernel, not the allocator); else a fresh Output per call, as `attend` uses.
  bool reuse_output = false;
  bool keep_output = false;  // Measurement::output = the last call's output
  HeapProbe heap;
  // Called once, after the check passed, instead of the timed calls above.
  std::function<void()> timed_section;
};

// One output against the oracle, at the kernel's tolerance.
struct OracleCheck {
  bool gated = true;     // the kernel is exact: a failure refuses the timing
  bool pass = false;     // o and lse (o only for an approximation) within tolerance
  CheckReport o, lse;    // lse is an empty pass for an approximation (not compared)
  std::string failure;   // "" on pass; else "o: <reason>" or "lse: <reason>"
  bool oracle_full = false;   // the whole output compared (else the oracle's sampled rows)
  int64_t heads_checked = 0;  // heads [0, heads_checked) of every batch
  double max_abs_error() const { return std::fmax(o.max_abs_error, lse.max_abs_error); }
  // The report that decides: the failing one, else the one using more of its budget.
  const CheckReport& worst() const {
    const bool lse_decides =
        (o.pass && !lse.pass) || (o.pass == lse.pass && lse.budget_used > o.budget_used);
    return lse_decides ? lse : o;
  }
  double budget_used() const { return worst().budget_used; }
};

// `out` (kernel's result on `problem`) against `oracle`. The candidate's heads [0, h) are
// compared, h = min(problem heads, oracle.heads): a kernel run on a head prefix of the
// oracle's problem, or an oracle on a head prefix of the kernel's problem.
OracleCheck check_output(const Kernel& kernel, const Problem& problem, const Oracle& oracle,
                         const Output& out);

struct Measurement {
  OracleCheck check;
  int64_t peak_bytes = 0;        // extra heap of the checked call, outputs included (plan.heap)
  bool timed = false;            // passed (or not gated) and timed
  std::vector<double> seconds;   // wall clock of each timed call, in order; empty with a
                                 // timed_section or when refused
  int calls = 0;                 // kernel calls made (the timed_section's not counted)
  Output output;                 // with plan.keep_output
  double best() const;           // min of seconds (NaN when empty)
  double median() const;         // mean of the two middle ones for an even count (NaN when empty)
  double worst_time() const;     // max of seconds (NaN when empty)
};

// The harness (steps 1-4 above). Throws InvalidArgument("repeats" / "warmup") for a bad plan.
Measurement measure(const Kernel& kernel, const Problem& problem, const Oracle& oracle,
                    const TimingPlan& plan);

// The oracle itself measured like any kernel (the demo and the real-data job list it as a
// row): a1_dense_masked's first call becomes the oracle (full, every head of `problem`),
// which checks that call (error 0), and `plan` times it.
struct OracleRun {
  Oracle oracle;
  Measurement measurement;
};
OracleRun time_oracle(const Problem& problem, const TimingPlan& plan);

}  // namespace sparseattn::api
