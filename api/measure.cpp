// The measurement harness (measure.h): check first, then time.
#include "api/measure.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "core/error.h"

namespace sparseattn::api {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Of x ([batch, heads_x, rows_x, cols] flattened), the rows `rows` (every row when null)
// of heads [0, h) of every batch, as a float64 tensor of `shape`.
template <class T>
Tensor<double> take(const Tensor<T>& x, int64_t batch, int64_t heads_x, int64_t rows_x,
                    const std::vector<int64_t>* rows, int64_t cols, int64_t h, const Shape& shape) {
  const int64_t nr = rows ? static_cast<int64_t>(rows->size()) : rows_x;
  Tensor<double> g(shape);
  int64_t at = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t hd = 0; hd < h; ++hd)
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = rows ? (*rows)[r] : r;
        const T* src = x.data.data() + ((b * heads_x + hd) * rows_x + i) * cols;
        for (int64_t c = 0; c < cols; ++c) g.data[at++] = static_cast<double>(src[c]);
      }
  return g;
}

Shape with_heads(Shape shape, int64_t h) {
  shape[1] = h;
  return shape;
}

// One tensor (o: cols = head_dim_v, lse: cols = 1) of the candidate against the oracle's,
// on heads [0, h). Copies only what has to be cut: a head prefix, or the sampled rows.
template <class T>
CheckReport compare(const Tensor<T>& cand, const Tensor<double>& ref, const Oracle& oracle,
                    const AttentionShape& s, int64_t cols, int64_t h, Tolerance tol) {
  // A candidate of the wrong size is compared as it is: the checker names the mismatch.
  if (cand.numel() != s.batch * s.num_heads * s.seq_len_q * cols || cand.shape.size() < 2)
    return check_close(cand, ref, tol);
  const bool cut_ref = h < oracle.heads;
  if (oracle.full) {
    const Tensor<double> r =
        cut_ref ? take(ref, oracle.batch, oracle.heads, oracle.seq_len_q, nullptr, cols, h,
                       with_heads(ref.shape, h))
                : Tensor<double>{};
    const Tensor<double>& r_used = cut_ref ? r : ref;
    if (h == s.num_heads) return check_close(cand, r_used, tol);
    return check_close(take(cand, s.batch, s.num_heads, s.seq_len_q, nullptr, cols, h,
                            with_heads(cand.shape, h)),
                       r_used, tol);
  }
  const int64_t nr = static_cast<int64_t>(oracle.rows.size());
  const Shape rows_shape{s.batch * h * nr, cols};
  const Tensor<double> c =
      take(cand, s.batch, s.num_heads, s.seq_len_q, &oracle.rows, cols, h, rows_shape);
  if (!cut_ref) return check_close(c, ref, tol);
  return check_close(c, take(ref, oracle.batch, oracle.heads, nr, nullptr, cols, h, rows_shape),
                     tol);
}

// The harness's loop: the checked call, `judge` on its output, then the timing.
Measurement run_plan(const Kernel& kernel, const Problem& problem, const TimingPlan& plan,
                     const std::function<OracleCheck(const Output&)>& judge) {
  require(plan.repeats >= 1, "repeats", plan.repeats, "must be an integer >= 1 (timed calls)");
  require(plan.warmup >= 0, "warmup", plan.warmup, "must be an integer >= 0 (untimed calls)");
  Measurement m;
  Output out;
  const bool heap = plan.heap.in_use && plan.heap.peak && plan.heap.reset_peak;
  const int64_t before = heap ? plan.heap.in_use() : 0;
  if (heap) plan.heap.reset_peak();
  const auto t0 = Clock::now();
  kernel.run(problem, out);
  const double checked_s = seconds_since(t0);
  ++m.calls;
  if (heap) m.peak_bytes = plan.heap.peak() - before;
  m.check = judge(out);
  if (m.check.gated && !m.check.pass) {  // refused: never timed
    if (plan.keep_output) m.output = std::move(out);
    return m;
  }
  m.timed = true;
  if (!plan.reuse_output && !plan.keep_output) out = Output{};  // not held while timing
  if (plan.timed_section) {
    plan.timed_section();
    if (plan.keep_output) m.output = std::move(out);
    return m;
  }
  double total = 0.0;
  if (plan.time_checked_call) {
    m.seconds.push_back(checked_s);
    total = checked_s;
  }
  for (int64_t w = 0; w < plan.warmup; ++w) {
    Output fresh;
    kernel.run(problem, plan.reuse_output ? out : fresh);
    ++m.calls;
  }
  while (static_cast<int64_t>(m.seconds.size()) < plan.repeats && total < plan.stop_after_total_s &&
         (m.seconds.empty() || m.seconds.back() <= plan.stop_after_call_s)) {
    Output fresh;
    const auto t = Clock::now();
    kernel.run(problem, plan.reuse_output ? out : fresh);
    const double s = seconds_since(t);
    ++m.calls;
    m.seconds.push_back(s);
    total += s;
    if (!plan.reuse_output && plan.keep_output) out = std::move(fresh);  // after the clock
  }
  if (plan.keep_output) m.output = std::move(out);
  return m;
}

}  // namespace

OracleCheck check_output(const Kernel& kernel, const Problem& problem, const Oracle& oracle_in,
                         const Output& out) {
  const Oracle& oracle = oracle_for(kernel.dtype, problem, oracle_in);
  const Tolerance tol{kernel.atol, kernel.rtol};
  const AttentionShape& s = problem.shape;
  require(oracle.batch == s.batch && oracle.seq_len_q == s.seq_len_q && oracle.heads >= 1, "oracle",
          "batch " + std::to_string(oracle.batch) + ", seq_len_q " +
              std::to_string(oracle.seq_len_q),
          "must be the oracle of this problem's batch and seq_len_q (" + std::to_string(s.batch) +
              ", " + std::to_string(s.seq_len_q) + ")");
  OracleCheck c;
  c.gated = kernel.exact;
  c.oracle_full = oracle.full;
  c.heads_checked = std::min(s.num_heads, oracle.heads);
  auto judge = [&](const auto& o, const auto& lse) {
    c.o = compare(o, oracle.o, oracle, s, s.head_dim_v, c.heads_checked, tol);
    // An approximation's lse has no exact meaning to compare (contract §4.8).
    if (kernel.exact) c.lse = compare(lse, oracle.lse, oracle, s, 1, c.heads_checked, tol);
    else c.lse.pass = true;
  };
  if (kernel.dtype == DType::float64) judge(out.o, out.lse);
  else judge(out.o32, out.lse32);
  c.pass = c.o.pass && c.lse.pass;
  if (!c.o.pass) c.failure = "o: " + c.o.reason;
  else if (!c.lse.pass) c.failure = "lse: " + c.lse.reason;
  return c;
}

double Measurement::best() const {
  return seconds.empty() ? NAN : *std::min_element(seconds.begin(), seconds.end());
}

double Measurement::worst_time() const {
  return seconds.empty() ? NAN : *std::max_element(seconds.begin(), seconds.end());
}

double Measurement::median() const {
  if (seconds.empty()) return NAN;
  std::vector<double> v = seconds;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

Measurement measure(const Kernel& kernel, const Problem& problem, const Oracle& oracle,
                    const TimingPlan& plan) {
  return run_plan(kernel, problem, plan, [&](const Output& out) {
    return check_output(kernel, problem, oracle, out);
  });
}

OracleRun time_oracle(const Problem& problem, const TimingPlan& plan) {
  const Kernel& a1 = find_kernel("a1_dense_masked");
  OracleRun run;
  run.measurement = run_plan(a1, problem, plan, [&](const Output& out) {
    run.oracle = full_oracle(problem, out.o, out.lse);
    return check_output(a1, problem, run.oracle, out);
  });
  return run;
}

}  // namespace sparseattn::api
