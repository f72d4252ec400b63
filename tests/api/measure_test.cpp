// Checks contract §4.11 (a kernel is timed only after its output passed, §4.7, §4.2) and
// §4.3 (half-precision kernels against the oracle on their rounded inputs) for the harness
// api/measure.h, with registry-entry test doubles: a correct kernel is checked, then
// timed; a planted wrong kernel (o or lse nudged far outside float32's tolerance) is
// refused and never called again, whatever the plan; the figures it reports are
// recomputed here from a1_dense_masked.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "api/alloc_tracker.h"
#include "api/measure.h"
#include "core/bfloat16.h"
#include "core/error.h"
#include "core/seeded_inputs.h"
#include "reference/attention.h"
#include "tests/api/kernel_doubles.h"

namespace sparseattn::api {
namespace {

using testing_doubles::double_of;
using testing_doubles::generic;

int g_calls = 0;

void run_right(const Problem& p, Output& out) {
  ++g_calls;
  generic().run(p, out);
}

// The right answer, then every element of o nudged by 1e-3 (50x float32's atol).
void run_wrong_o(const Problem& p, Output& out) {
  run_right(p, out);
  for (float& x : out.o32.data) x += 1e-3f;
}

void run_wrong_lse(const Problem& p, Output& out) {
  run_right(p, out);
  out.lse32.data[out.lse32.numel() - 1] += 1e-2f;
}

// Wrong only in heads >= 1: element 0 of every row of those heads.
void run_wrong_after_head0(const Problem& p, Output& out) {
  run_right(p, out);
  const AttentionShape& s = p.shape;
  for (int64_t e = s.seq_len_q * s.head_dim_v; e < out.o32.numel(); e += s.head_dim_v)
    out.o32.data[e] += 1e-3f;
}

// Wrong only in the last query row of every head (a row the sampled oracle keeps).
void run_wrong_last_row(const Problem& p, Output& out) {
  run_right(p, out);
  const AttentionShape& s = p.shape;
  for (int64_t h = 0; h < s.num_heads; ++h)
    out.o32.data[((h + 1) * s.seq_len_q - 1) * s.head_dim_v] += 1e-3f;
}

void run_slow(const Problem& p, Output& out) {
  run_right(p, out);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

// A window pattern at an awkward size: seq_len 77 (a partial tile), head_dim 12, 2 heads.
struct Case {
  Pattern pattern;
  Problem problem;
  Case(int64_t heads, int64_t n, int64_t head_dim)
      : pattern(materialize(window_spec(), {1, heads, n, n})) {
    const uint64_t seed =
        testing_inputs::seed_of("measure/" + std::to_string(heads) + "/" + std::to_string(n));
    problem = make_problem(testing_inputs::random_tensor({1, heads, n, head_dim}, seed),
                           testing_inputs::random_tensor({1, heads, n, head_dim}, seed + 1),
                           testing_inputs::random_tensor({1, heads, n, head_dim}, seed + 2),
                           pattern, nullptr);
  }
  // Heads [0, heads) of `from`: the same inputs, a pattern with fewer heads.
  Case(const Case& from, int64_t heads)
      : pattern(materialize(window_spec(), {1, heads, from.problem.shape.seq_len_q,
                                            from.problem.shape.seq_len_k})) {
    problem = make_problem(first_heads(from.problem.q, heads), first_heads(from.problem.k, heads),
                           first_heads(from.problem.v, heads), pattern, nullptr);
  }
  static PatternSpec window_spec() {
    PatternSpec s;
    s.kind = PatternKind::window;
    s.window = 9;
    return s;
  }
};

// max |candidate - a1_dense_masked| over o and lse, computed here without the harness.
double max_abs_vs_a1(const Problem& p, const Output& out) {
  const AttentionResult ref = a1_dense_masked(p.q, p.k, p.v, *p.pattern, &p.scale);
  double m = 0.0;
  for (size_t e = 0; e < ref.o.data.size(); ++e)
    m = std::fmax(m, std::fabs(out.o32.data[e] - ref.o.data[e]));
  for (size_t e = 0; e < ref.lse.data.size(); ++e)
    m = std::fmax(m, std::fabs(out.lse32.data[e] - ref.lse.data[e]));
  return m;
}

TEST(Measure, ACorrectKernelIsCheckedThenTimed) {
  const Case c(2, 77, 12);
  const Kernel right = double_of("test_right", &run_right);
  TimingPlan plan;
  plan.repeats = 4;
  plan.warmup = 2;
  plan.keep_output = true;
  plan.heap = heap_probe();
  g_calls = 0;
  const Measurement m = measure(right, c.problem, make_oracle(c.problem), plan);
  EXPECT_TRUE(m.check.pass) << m.check.failure;
  EXPECT_TRUE(m.check.gated);
  EXPECT_TRUE(m.check.oracle_full);
  EXPECT_EQ(m.check.heads_checked, 2);
  EXPECT_TRUE(m.timed);
  EXPECT_EQ(g_calls, 1 + 2 + 4);  // checked, warm-up, timed
  EXPECT_EQ(m.calls, 7);
  ASSERT_EQ(m.seconds.size(), 4u);
  for (double s : m.seconds) EXPECT_GT(s, 0.0);
  EXPECT_LE(m.best(), m.median());
  EXPECT_LE(m.median(), m.worst_time());
  // The reported error is the oracle's, recomputed: max over o and lse of |x - a1|.
  EXPECT_DOUBLE_EQ(m.check.max_abs_error(), max_abs_vs_a1(c.problem, m.output));
  EXPECT_GT(m.check.max_abs_error(), 0.0);  // float32: not bit-equal to float64
  EXPECT_LE(m.check.budget_used(), 1.0);
  EXPECT_GE(m.peak_bytes, 2 * 77 * 12 * 4);  // its output o [1, 2, 77, 12] float32 at least
}

TEST(Measure, APlantedWrongKernelIsRefusedAndNeverTimed) {
  const Case c(2, 77, 12);
  const Oracle oracle = make_oracle(c.problem);
  const Kernel wrong = double_of("test_wrong_o", &run_wrong_o);
  bool section_ran = false;
  TimingPlan own_loop, checked_counts, section;
  own_loop.repeats = 5;
  own_loop.warmup = 3;
  checked_counts.repeats = 5;
  checked_counts.time_checked_call = true;
  section.timed_section = [&] { section_ran = true; };
  for (const TimingPlan* plan : {&own_loop, &checked_counts, &section}) {
    g_calls = 0;
    const Measurement m = measure(wrong, c.problem, oracle, *plan);
    EXPECT_FALSE(m.check.pass);
    EXPECT_FALSE(m.timed);
    EXPECT_TRUE(m.seconds.empty());  // the checked call's clock reading is dropped too
    EXPECT_TRUE(std::isnan(m.best()));
    EXPECT_EQ(g_calls, 1);  // the checked call only
    EXPECT_EQ(m.calls, 1);
    EXPECT_EQ(m.check.failure.rfind("o: ", 0), 0u) << m.check.failure;
    EXPECT_NEAR(m.check.o.max_abs_error, 1e-3, 5e-5);
    EXPECT_GT(m.check.budget_used(), 1.0);
  }
  EXPECT_FALSE(section_ran);
  // The same plans time the right kernel: the refusal is the check's doing.
  const Kernel right = double_of("test_right", &run_right);
  EXPECT_TRUE(measure(right, c.problem, oracle, section).timed);
  EXPECT_TRUE(section_ran);
  EXPECT_EQ(measure(right, c.problem, oracle, checked_counts).seconds.size(), 5u);
}

TEST(Measure, AWrongLseIsRefusedAndNamed) {
  const Case c(2, 77, 12);
  const Kernel wrong = double_of("test_wrong_lse", &run_wrong_lse);
  g_calls = 0;
  const Measurement m = measure(wrong, c.problem, make_oracle(c.problem), TimingPlan{});
  EXPECT_TRUE(m.check.o.pass);
  EXPECT_FALSE(m.check.lse.pass);
  EXPECT_FALSE(m.timed);
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(m.check.failure.rfind("lse: ", 0), 0u) << m.check.failure;
  EXPECT_EQ(&m.check.worst(), &m.check.lse);
  EXPECT_EQ(m.check.lse.num_mismatched, 1);
}

TEST(Measure, AnApproximationIsMeasuredNotGated) {
  const Case c(2, 77, 12);
  const Kernel approx = double_of("test_approx", &run_wrong_o, /*exact=*/false);
  TimingPlan plan;
  plan.repeats = 2;
  const Measurement m = measure(approx, c.problem, make_oracle(c.problem), plan);
  EXPECT_FALSE(m.check.gated);
  EXPECT_FALSE(m.check.pass);             // its error is reported ...
  EXPECT_NEAR(m.check.max_abs_error(), 1e-3, 5e-5);
  EXPECT_EQ(m.check.lse.num_elements, 0);  // ... on o only (contract §4.8)
  EXPECT_TRUE(m.timed);                    // ... and it is timed all the same
  EXPECT_EQ(m.seconds.size(), 2u);
}

TEST(Measure, TheStopRulesEndTheTimedCalls) {
  const Case c(1, 77, 12);
  const Oracle oracle = make_oracle(c.problem);
  const Kernel slow = double_of("test_slow", &run_slow);  // >= 30 ms a call
  TimingPlan plan;
  plan.repeats = 3;
  plan.time_checked_call = true;
  plan.stop_after_call_s = 0.01;  // the checked call is already longer: no other call
  g_calls = 0;
  Measurement m = measure(slow, c.problem, oracle, plan);
  EXPECT_EQ(m.seconds.size(), 1u);
  EXPECT_EQ(g_calls, 1);
  EXPECT_GE(m.best(), 0.03);
  plan.stop_after_call_s = INFINITY;
  plan.stop_after_total_s = 0.05;  // two calls of >= 30 ms reach it; one may (a loaded machine)
  g_calls = 0;
  m = measure(slow, c.problem, oracle, plan);
  ASSERT_GE(m.seconds.size(), 1u);
  EXPECT_LE(m.seconds.size(), 2u);
  EXPECT_EQ(g_calls, static_cast<int>(m.seconds.size()));
  // The rule itself: a further call only while the samples so far sum to less than 0.05 s.
  double total = 0.0;
  for (size_t i = 0; i + 1 < m.seconds.size(); ++i) EXPECT_LT(total += m.seconds[i], 0.05);
  EXPECT_GE(total + m.seconds.back(), 0.05);
}

TEST(Measure, AHeadPrefixOracleChecksTheHeadsItCovers) {
  const Case all(3, 77, 12), first(all, 1);
  // The demo's case: the oracle on head 0 only, kernels on every head.
  const OracleRun on_head0 = time_oracle(first.problem, TimingPlan{});
  EXPECT_TRUE(on_head0.measurement.check.pass);
  EXPECT_EQ(on_head0.measurement.check.max_abs_error(), 0.0);  // the oracle against itself
  const Kernel wrong_later = double_of("test_wrong_after_head0", &run_wrong_after_head0);
  const Kernel wrong = double_of("test_wrong_o", &run_wrong_o);
  const Measurement later = measure(wrong_later, all.problem, on_head0.oracle, TimingPlan{});
  EXPECT_EQ(later.check.heads_checked, 1);
  EXPECT_TRUE(later.check.pass);  // heads 1, 2 are not the oracle's: not compared
  EXPECT_FALSE(measure(wrong, all.problem, on_head0.oracle, TimingPlan{}).check.pass);
  // The real-data job's case: a kernel on head 0 only against the oracle on all heads.
  const Oracle on_all = make_oracle(all.problem);
  const Kernel right = double_of("test_right", &run_right);
  const Measurement sub = measure(right, first.problem, on_all, TimingPlan{});
  EXPECT_EQ(sub.check.heads_checked, 1);
  EXPECT_TRUE(sub.check.pass) << sub.check.failure;
  EXPECT_FALSE(measure(wrong, first.problem, on_all, TimingPlan{}).check.pass);
  // Against all 3 heads the later-head mistake is caught.
  EXPECT_FALSE(measure(wrong_later, all.problem, on_all, TimingPlan{}).check.pass);
}

TEST(Measure, SampledRowsIncludeTheLastRowOfEveryHead) {
  // seq_len 2049: seq_len² just above kFullOracleMaxPairs, so the oracle is sampled rows.
  const Case c(2, 2049, 8);
  const Oracle oracle = make_oracle(c.problem);
  ASSERT_FALSE(oracle.full);
  ASSERT_EQ(oracle.rows.size(), static_cast<size_t>(kSampledRows));
  EXPECT_EQ(oracle.rows.front(), 0);
  EXPECT_EQ(oracle.rows.back(), 2048);
  const Kernel right = double_of("test_right", &run_right);
  const Measurement ok = measure(right, c.problem, oracle, TimingPlan{});
  EXPECT_TRUE(ok.check.pass) << ok.check.failure;
  EXPECT_FALSE(ok.check.oracle_full);
  const Kernel wrong = double_of("test_wrong_last_row", &run_wrong_last_row);
  const Measurement bad = measure(wrong, c.problem, oracle, TimingPlan{});
  EXPECT_FALSE(bad.timed);
  EXPECT_EQ(bad.check.o.num_mismatched, 2);  // one element in each head's last row
}

TEST(Measure, HalfPrecisionKernelsMeetTheOracleOnTheirRoundedInputs) {
  // Hand-computed float16 roundings (ties to even) and bfloat16's of core/bfloat16.h.
  Tensor<double> v({5}, 0.0);
  v.data = {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65519.0, 65520.0, 1.0 / 3.0};
  const Tensor<double> h = round_inputs(v, DType::float16);
  EXPECT_EQ(h.data[0], 1.0);
  EXPECT_EQ(h.data[1], 1.0 + 0x1p-9);
  EXPECT_EQ(h.data[2], 65504.0);
  EXPECT_TRUE(std::isinf(h.data[3]));
  EXPECT_EQ(h.data[4], 0x1.554p-2);  // 1/3 to 11 significant bits
  EXPECT_EQ(round_inputs(v, DType::bfloat16).data[4], round_to_bfloat16(1.0 / 3.0));
  EXPECT_EQ(round_inputs(v, DType::float32).data, v.data);  // float32: the unrounded oracle

  const Case c(2, 77, 12);
  const Oracle oracle = make_oracle(c.problem);
  const Oracle& rounded = oracle_for(DType::bfloat16, c.problem, oracle);
  ASSERT_NE(&rounded, &oracle);
  EXPECT_EQ(rounded.inputs, DType::bfloat16);
  EXPECT_EQ(&oracle_for(DType::bfloat16, c.problem, oracle), &rounded);  // built once
  EXPECT_EQ(&oracle_for(DType::float32, c.problem, oracle), &oracle);
  const AttentionResult a1 =
      a1_dense_masked(round_to_bfloat16(c.problem.q), round_to_bfloat16(c.problem.k),
                      round_to_bfloat16(c.problem.v), c.pattern, &c.problem.scale);
  EXPECT_EQ(rounded.o.data, a1.o.data);
  EXPECT_EQ(rounded.lse.data, a1.lse.data);
  const Measurement m =
      measure(find_kernel("cpu_k06_generic_tiles_bf16"), c.problem, oracle, TimingPlan{});
  EXPECT_TRUE(m.timed) << m.check.failure;

  // Inputs bfloat16 holds exactly (multiples of 1/32 in [-4, 4)): the oracle is reused.
  Problem exact = c.problem;
  for (Tensor<double>* t : {&exact.q, &exact.k, &exact.v})
    for (double& e : t->data) e = std::nearbyint(e * 32.0) / 32.0;
  EXPECT_EQ(&oracle_for(DType::bfloat16, exact, oracle), &oracle);
}

TEST(Measure, BadPlansAndForeignOraclesAreRefused) {
  const Case c(1, 77, 12), other(1, 78, 12);
  const Kernel right = double_of("test_right", &run_right);
  const Oracle oracle = make_oracle(c.problem);
  TimingPlan plan;
  plan.repeats = 0;
  g_calls = 0;
  try {
    measure(right, c.problem, oracle, plan);
    ADD_FAILURE() << "accepted repeats = 0";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "repeats");
  }
  plan.repeats = 1;
  plan.warmup = -1;
  EXPECT_THROW(measure(right, c.problem, oracle, plan), InvalidArgument);
  EXPECT_EQ(g_calls, 0);  // refused before any call
  // An oracle of another seq_len is not compared.
  EXPECT_THROW(measure(right, other.problem, oracle, TimingPlan{}), InvalidArgument);
}

}  // namespace
}  // namespace sparseattn::api
