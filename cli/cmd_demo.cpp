// sparseattn demo — the main job on default data: every registered kernel
// on every pattern it serves, each validated against the float64 oracle, then timed.
//
//   sparseattn demo [--seq-len 4096] [--num-heads 12] [--head-dim 64] [--seed 0]
//                   [--reference-heads 1] [--json FILE] [pattern flags | --pattern-file P.json]
//
// Without pattern flags it runs the built-in patterns (cli/demo_patterns.h; their widths
// scale with --seq-len, so a small run is still sparse); with them, that one pattern.
// --seed seeds the inputs and, for the kinds that draw (random, bigbird), the pattern.
//
// What is compared with what (printed again in the table header, because a speedup is
// only as honest as its baseline):
//   * Inputs: q, k, v [1, H, N, D], seeded normals (SplitMix64 counter PRNG from
//     pattern/prng.h + Box-Muller) rounded to multiples of 1/32 in [-4, 4).
//     Such values are exact in float16, bfloat16 and float32, so the float32 and the
//     half-input kernels all see exactly the oracle's inputs and one oracle serves all.
//   * The oracle a1_dense_masked (float64) costs O(N^2) per head whatever the pattern, so
//     it runs on the first --reference-heads heads only (default 1 of 12); every error in
//     the table is measured on those heads. The other serial float64 reference steps
//     (a0, a2..a5) run on the same heads; cpu and cuda kernels run on all H heads.
//   * Time is per head: the best of up to 3 runs (fewer when one run is slow), divided by
//     the heads that run processed. Speedup = a0_dense's time per head (the dense
//     definition, measured once on the dense pattern) / this time per head. Check and
//     time are the harness's (api/measure.h): the first run is checked, and counts as a
//     run only when it passed.
//   * An exact kernel that fails its check (the tolerance its registry entry declares,
//     from core/numerics.h) is not timed (ms/head nan) and makes the demo exit 1.
//     Approximations (registry exact = false: Performer, Nystromformer) show their
//     measured error as "approx", never pass/fail. A CUDA kernel on a machine without a
//     device is listed as skipped with the reason.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "api/inputs.h"
#include "api/measure.h"
#include "cli/demo_patterns.h"
#include "api/pattern_file.h"
#include "core/check.h"
#include "core/error.h"
#include "core/npy.h"
#include "pattern/prng.h"
#include "registry/registry.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct DemoArgs {
  int64_t seq_len = 4096;
  int64_t num_heads = 12;
  int64_t head_dim = 64;
  int64_t reference_heads = 1;
  std::string json;
  PatternFlags pattern;  // its --seed also seeds the inputs
  CLI::Option* num_heads_flag = nullptr;
};

// The patterns to run: the pattern flags' one pattern when any is given, else the built-in
// ones. --seed alone does not count as a pattern flag: it seeds the inputs too, so it is
// passed to the pattern only when its kind draws random numbers.
std::vector<DemoPattern> patterns_to_run(const DemoArgs& a) {
  PatternFlags pf = a.pattern;
  pf.seed = 0;
  if (pf.pattern_file.empty() && flags_to_json(pf).empty())
    return demo_patterns(a.seq_len, a.pattern.seed);
  const bool draws = pf.pattern == "random" || pf.pattern == "bigbird" || pf.pattern == "bigbird-etc";
  if (draws && pf.pattern_file.empty()) pf.seed = a.pattern.seed;
  return {{pf.pattern_file.empty() ? pf.pattern : "pattern-file", to_spec(pf)}};
}

// --- Seeded inputs ----------------------------------------------------------------

// Element e of tensor `tensor_id` (0 q, 1 k, 2 v): one Box-Muller normal from draws 2e and
// 2e+1 of the stream keyed (seed, tensor_id, 0). Counter-based, so the data depend only on
// (seed, tensor, e) — not on the order of generation or on a library's distribution.
// (std::log and std::cos may differ in the last bit between math libraries; the rounding
// to multiples of 1/32 below hides that except at a rounding boundary.)
double seeded_normal(uint64_t seed, uint64_t tensor_id, uint64_t e) {
  constexpr double kPi = 3.141592653589793;
  const uint64_t key = prng_stream_key(seed, tensor_id, 0);
  const double two_pow_53 = 9007199254740992.0;
  const double u1 = (static_cast<double>(prng_bits(key, 2 * e) >> 11) + 1.0) / two_pow_53;  // (0, 1]
  const double u2 = static_cast<double>(prng_bits(key, 2 * e + 1) >> 11) / two_pow_53;     // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}

// Multiples of 1/32 in [-4, 4): 8 significant bits at most, exact in bfloat16 and float16.
double round_to_half_exact(double x) {
  const double k = std::nearbyint(x * 32.0);
  return std::fmin(std::fmax(k, -128.0), 127.0) / 32.0;
}

Tensor<double> seeded_tensor(const Shape& shape, uint64_t seed, uint64_t tensor_id) {
  Tensor<double> t(shape);
  for (int64_t e = 0; e < t.numel(); ++e)
    t.data[e] = round_to_half_exact(seeded_normal(seed, tensor_id, static_cast<uint64_t>(e)));
  return t;
}

// --- Running and timing one kernel -------------------------------------------------

struct Row {
  std::string pattern, variant, target, dtype, status, note;
  int64_t heads_run = 0;
  double max_abs_error = NAN, budget_used = NAN;
  double seconds_per_head = NAN;
  double speedup = NAN;
};

using Clock = std::chrono::steady_clock;

// The harness's plan for every row: the checked call counts as the first run once it has
// passed, then more runs (up to 3 in all) while they total under 1.5 s and none took over
// half a second; the fastest is the row's time.
TimingPlan demo_plan() {
  TimingPlan plan;
  plan.repeats = 3;
  plan.time_checked_call = true;
  plan.stop_after_total_s = 1.5;
  plan.stop_after_call_s = 0.5;
  return plan;
}

struct Inputs {
  Tensor<double> q, k, v;  // all heads
  Tensor<double> q_ref, k_ref, v_ref;  // the first reference_heads heads
};

// Runs every kernel that serves `dp` and appends one row per kernel. `a0_seconds` is the
// dense definition's time per head (NaN until the dense pattern has run it).
void run_pattern(const DemoArgs& a, const DemoPattern& dp, const Inputs& in,
                 double* a0_seconds, std::vector<Row>& rows, bool* all_pass) {
  PatternSizes full{1, a.num_heads, a.seq_len, a.seq_len};
  PatternSizes sub{1, a.reference_heads, a.seq_len, a.seq_len};
  const Pattern pattern = materialize(dp.spec, full);
  // Heads 0..h-1 of the full pattern: random draws are keyed by (seed, head, row), so a
  // pattern with fewer heads is exactly the full pattern's first heads.
  PatternSpec ref_spec = dp.spec;  // a per-head spec lists one pattern per head: keep the first
  if (ref_spec.kind == PatternKind::per_head)
    ref_spec.per_head.resize(static_cast<size_t>(a.reference_heads));
  const Pattern pattern_ref = materialize(ref_spec, sub);
  const PatternStats st = pattern_stats(pattern);

  std::cout << fmt::format("\n{}: {}\n  nnz {} of {} (density {:.4f}), keys per row {}..{} (mean {:.1f}), "
                           "random shortfall {}\n",
                           dp.label, describe(dp.spec), st.nnz, st.dense_pairs, st.density,
                           st.row_min, st.row_max, st.row_mean, pattern.random_shortfall);
  std::cout << fmt::format("  {:<28} {:<9} {:<8} {:>5} {:>11} {:>8} {:>12} {:>9}  {}\n", "variant",
                           "target", "dtype", "heads", "max|err|", "budget", "ms/head",
                           "vs a0", "check");

  const Problem problem_ref = make_problem(in.q_ref, in.k_ref, in.v_ref, pattern_ref, nullptr);
  std::optional<Problem> problem_full;  // built on first use (cpu/cuda kernels)

  // The oracle first: its run is also a1_dense_masked's row. Every other kernel is
  // checked against it (on heads 0..reference_heads-1) before it is timed.
  const Kernel& oracle_kernel = find_kernel("a1_dense_masked");
  const OracleRun oracle = time_oracle(problem_ref, demo_plan());

  for (const Kernel& k : kernels()) {
    if (!k.serves(pattern)) continue;
    Row row;
    row.pattern = dp.label;
    row.variant = k.name;
    row.target = target_name(k.target);
    row.dtype = dtype_name(k.dtype);
    const bool reference = k.target == Target::reference;
    row.heads_run = reference ? a.reference_heads : a.num_heads;
    try {
      Measurement m;
      if (&k == &oracle_kernel) {
        m = oracle.measurement;
      } else {
        if (!reference && !problem_full) problem_full = make_problem(in.q, in.k, in.v, pattern, nullptr);
        m = measure(k, reference ? problem_ref : *problem_full, oracle.oracle, demo_plan());
      }
      const CheckReport& r = m.check.worst();
      row.max_abs_error = m.check.max_abs_error();
      row.budget_used = m.check.budget_used();
      row.seconds_per_head = m.best() / static_cast<double>(row.heads_run);  // NaN: not timed
      row.status = m.check.pass ? "pass" : "FAIL";
      if (!m.check.pass) row.note = (&r == &m.check.lse ? "lse: " : "") + r.reason;
      if (!k.exact) {
        // Performer, Nystromformer: their error is the measurement, not a defect.
        row.status = "approx";
        row.note = "approximation: max |err| of o measured, not asserted";
        row.budget_used = NAN;
      }
      if (&k == &oracle_kernel) row.note = "the oracle itself";
      if (std::string(k.name) == "a0_dense") *a0_seconds = row.seconds_per_head;
    } catch (const RuntimeError& e) {
      // Only the environment (no CUDA device) raises RuntimeError here; bad input or a
      // kernel bug raises something else and fails the row below.
      row.status = "skipped";
      row.note = e.what();
    } catch (const std::exception& e) {
      row.status = "FAIL";
      row.note = e.what();
    }
    if (row.status == "FAIL") *all_pass = false;
    row.speedup = *a0_seconds / row.seconds_per_head;
    const std::string budget = std::isnan(row.budget_used) ? "-"
                               : std::isinf(row.budget_used) ? "inf"
                                                             : fmt::format("{:.3f}", row.budget_used);
    std::cout << fmt::format("  {:<28} {:<9} {:<8} {:>5} {:>11.3e} {:>8} {:>12.3f} {:>9}  {}{}\n",
                             row.variant, row.target, row.dtype, row.heads_run, row.max_abs_error,
                             budget, row.seconds_per_head * 1e3,
                             std::isfinite(row.speedup) ? fmt::format("{:.2f}x", row.speedup) : "n/a",
                             row.status, row.note.empty() ? "" : " (" + row.note + ")")
              << std::flush;  // a row at a time: the reference rows take seconds each
    rows.push_back(row);
  }
}

nlohmann::json finite_or_null(double x) {
  if (std::isfinite(x)) return x;
  return nullptr;
}

void run_demo(const DemoArgs& args) {
  DemoArgs a = args;
  const int64_t file_heads = pattern_file_heads(a.pattern);
  if (file_heads > 0 && !a.num_heads_flag->count()) {
    a.num_heads = file_heads;  // a per-head file fixes H
    a.reference_heads = std::min(a.reference_heads, a.num_heads);
  }
  const std::vector<DemoPattern> patterns = patterns_to_run(a);
  check_outputs({{"--json", a.json}}, {});  // fail before minutes of work, not after
  require(a.seq_len >= 1, "--seq-len", a.seq_len, "must be an integer >= 1");
  require(a.num_heads >= 1, "--num-heads", a.num_heads, "must be an integer >= 1");
  require(a.head_dim >= 1, "--head-dim", a.head_dim, "must be an integer >= 1");
  require(a.reference_heads >= 1 && a.reference_heads <= a.num_heads, "--reference-heads",
          a.reference_heads, "must be in [1, --num-heads] = [1, " + std::to_string(a.num_heads) + "]");
  const Shape shape = {1, a.num_heads, a.seq_len, a.head_dim};
  checked_numel(shape, 3 * (8 + 4), "demo size (--num-heads, --seq-len, --head-dim)");

  Inputs in;
  in.q = seeded_tensor(shape, a.pattern.seed, 0);
  in.k = seeded_tensor(shape, a.pattern.seed, 1);
  in.v = seeded_tensor(shape, a.pattern.seed, 2);
  in.q_ref = first_heads(in.q, a.reference_heads);
  in.k_ref = first_heads(in.k, a.reference_heads);
  in.v_ref = first_heads(in.v, a.reference_heads);

  std::cout << fmt::format(
      "sparseattn demo: seq_len {}, head_dim {}, num_heads {}, batch 1, seed {}\n"
      "inputs   seeded normals (SplitMix64 + Box-Muller) rounded to multiples of 1/32 in [-4, 4):\n"
      "         exact in float16, bfloat16 and float32, so every kernel sees the oracle's inputs\n"
      "oracle   a1_dense_masked (float64) on heads 0..{} of {} only; every error below is on those heads\n"
      "runs     reference steps (serial float64) on those {} head(s); cpu/cuda kernels on all {} heads\n"
      "time     per head = best of up to 3 runs / heads run; vs a0 = a0_dense ms/head / this ms/head\n"
      "budget   max |x - ref| / (atol + rtol |ref|) with the kernel's registry tolerance; pass <= 1\n",
      a.seq_len, a.head_dim, a.num_heads, a.pattern.seed, a.reference_heads - 1, a.num_heads,
      a.reference_heads, a.num_heads);

  const auto t0 = Clock::now();
  double a0_seconds = NAN;
  bool all_pass = true;
  std::vector<Row> rows;
  for (const DemoPattern& dp : patterns)
    run_pattern(a, dp, in, &a0_seconds, rows, &all_pass);
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();

  int64_t checked = 0, skipped = 0, failed = 0, approx = 0;
  for (const Row& r : rows) {
    checked += r.status == "pass" || r.status == "FAIL";
    skipped += r.status == "skipped";
    failed += r.status == "FAIL";
    approx += r.status == "approx";
  }
  std::cout << fmt::format("\n{} exact variant runs checked against the oracle: {} pass, {} FAIL; "
                           "{} approximations measured; {} skipped; {:.1f} s\n",
                           checked, checked - failed, failed, approx, skipped, total);

  if (!a.json.empty()) {
    nlohmann::json j;
    j["seq_len"] = a.seq_len;
    j["num_heads"] = a.num_heads;
    j["head_dim"] = a.head_dim;
    j["seed"] = a.pattern.seed;
    j["reference_heads"] = a.reference_heads;
    j["pass"] = all_pass;
    j["rows"] = nlohmann::json::array();
    for (const Row& r : rows)
      j["rows"].push_back({{"pattern", r.pattern},
                           {"variant", r.variant},
                           {"target", r.target},
                           {"dtype", r.dtype},
                           {"heads_run", r.heads_run},
                           {"max_abs_error", finite_or_null(r.max_abs_error)},
                           {"budget_used", finite_or_null(r.budget_used)},
                           {"seconds_per_head", finite_or_null(r.seconds_per_head)},
                           {"speedup_vs_a0", finite_or_null(r.speedup)},
                           {"status", r.status},
                           {"note", r.note}});
    write_text_atomic(a.json, j.dump(2) + "\n");
  }
  exit_code_ref() = all_pass ? 0 : 1;
}

}  // namespace

void register_demo(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "the main job: every kernel on seeded data for dense, Longformer, BigBird, dilated "
              "and random patterns; errors vs the float64 oracle, time, speedup over a0");
  cmd->add_option("--seq-len", args->seq_len, "N: tokens, integer >= 1")->capture_default_str();
  args->num_heads_flag =
      cmd->add_option("--num-heads", args->num_heads, "H: heads, integer >= 1 (a per-head "
                      "--pattern-file sets it)")->capture_default_str();
  cmd->add_option("--head-dim", args->head_dim, "D: head dimension, integer >= 1")
      ->capture_default_str();
  cmd->add_option("--reference-heads", args->reference_heads,
                  "heads the float64 oracle and the serial reference steps run on, in [1, H]; "
                  "errors are measured on these heads")
      ->capture_default_str();
  cmd->add_option("--json", args->json, "FILE: also write every row as JSON");
  // Includes --seed: the seed of the inputs and of the random patterns.
  add_pattern_flags(cmd, args->pattern);
  cmd->callback([args] { run_demo(*args); });
}

}  // namespace sparseattn::cli
