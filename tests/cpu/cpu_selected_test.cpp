// Checks contract §3.16 and §7.9 on every kernel of the registry that serves `selected`:
// the CPU forward cpu_k08_selected_gather against the oracle a1_dense_masked and its
// backward cpu_kb03_selected_gather_grad against b1_dense_masked_grad, each at its entry's
// tolerance (kTolFloat32), and their bf16 twins (cpu_k08_selected_gather_bf16,
// cpu_kb03_selected_gather_grad_bf16) at kTolBfloat16 against the same oracles evaluated on
// the bf16-rounded q, k, v (contract §4.3, docs/numerics.md), on a grid with K > L_k, all -1 rows, duplicates counted and not, shared lists
// under grouped kv heads (H_sel = 1, H_kv, H_q), per-batch lists, causal with L_q below and
// above L_k, key padding and heavy overlap (every query selecting the same keys); bit-
// identical results for 1 and 3 threads; exact zeros where the gradient is structurally
// zero; and the kernels that read only the layout refusing per-batch or counted selections
// by name.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/numerics.h"
#include "core/field.h"
#include "core/seeded_inputs.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"
#include "registry/registry.h"

namespace sparseattn {
namespace {

using testing_inputs::random_tensor;

struct SelCase {
  const char* name;
  int64_t B, Hq, Hkv, Lq, Lk, D, Dv, K, hsel, bsel;
  bool causal, padding, count;
  enum Fill { random, overlap, empty_rows } fill;
};

// A table of entries in [-1, L_k): random (about one in five -1, repeats likely when
// K > L_k), `overlap` (every query lists keys 1, 3, 3 and 5, then -1), or random with every
// third row all -1 (`empty_rows`).
Tensor<int64_t> table_for(const SelCase& c) {
  Tensor<int64_t> t({c.bsel, c.hsel, c.Lq, c.K});
  uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(c.Lq * 131 + c.K);
  for (int64_t r = 0; r < c.bsel * c.hsel * c.Lq; ++r)
    for (int64_t s = 0; s < c.K; ++s) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const int64_t u = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(c.Lk + c.Lk / 4 + 1));
      int64_t e = u >= c.Lk ? -1 : u;
      if (c.fill == SelCase::overlap) {
        const int64_t fixed[] = {1, 3, 3, 5};
        e = s < 4 ? std::min(fixed[s], c.Lk - 1) : -1;
      }
      if (c.fill == SelCase::empty_rows && (r % 3) == 1) e = -1;
      t.data[static_cast<size_t>(r * c.K + s)] = e;
    }
  return t;
}

Pattern pattern_for(const SelCase& c) {
  PatternSpec s;
  s.kind = PatternKind::selected;
  s.kv_indices = table_for(c);
  s.causal = c.causal;
  s.duplicates = c.count ? Duplicates::count : Duplicates::once;
  if (c.padding) {  // batch element 0: its keys 2 and L_k - 1 padded (the last query too)
    s.key_padding_mask = Tensor<uint8_t>({c.B, c.Lk}, 1);
    s.key_padding_mask->data[2] = 0;
    s.key_padding_mask->data[static_cast<size_t>(c.Lk - 1)] = 0;
  }
  return materialize(s, {c.B, c.Hq, c.Lq, c.Lk});
}

const SelCase kCases[] = {
    {"k_beyond_lk", 2, 2, 2, 9, 7, 8, 5, 16, 2, 1, false, false, false, SelCase::random},
    {"k_beyond_lk_counted", 2, 2, 2, 9, 7, 8, 5, 16, 2, 1, false, false, true, SelCase::random},
    {"all_minus_one_rows", 1, 2, 1, 12, 12, 8, 8, 4, 1, 1, false, false, false, SelCase::empty_rows},
    {"shared_list_gqa", 2, 8, 2, 17, 23, 16, 8, 6, 1, 1, false, false, false, SelCase::random},
    {"per_kv_head_gqa", 2, 6, 2, 17, 23, 16, 8, 6, 2, 1, true, false, false, SelCase::random},
    {"per_query_head_gqa", 1, 6, 3, 17, 23, 16, 8, 6, 6, 1, true, false, true, SelCase::random},
    {"causal_lq_below_lk", 1, 4, 4, 5, 19, 8, 8, 10, 4, 1, true, false, false, SelCase::random},
    {"causal_lq_above_lk", 1, 2, 1, 19, 5, 8, 8, 7, 1, 1, true, false, false, SelCase::random},
    {"padding_per_batch", 2, 4, 2, 13, 13, 8, 4, 6, 2, 2, false, true, false, SelCase::random},
    {"padding_causal_counted", 2, 4, 1, 13, 13, 8, 4, 20, 1, 2, true, true, true, SelCase::random},
    {"heavy_overlap", 2, 4, 2, 40, 9, 16, 16, 6, 1, 1, false, false, false, SelCase::overlap},
    {"heavy_overlap_counted", 1, 4, 2, 40, 9, 16, 16, 6, 2, 1, true, true, true, SelCase::overlap},
    {"wide", 1, 8, 1, 150, 300, 64, 64, 48, 1, 1, true, false, false, SelCase::random},
    // 16 heads on one list with counted repeats: the avx512 build's one-head-per-lane
    // blocks (R = 1), d_v = 40 a partial vector; the avx2 build's per-key path.
    {"shared_list_g16_counted", 1, 16, 1, 21, 50, 32, 40, 30, 1, 1, true, false, true,
     SelCase::random},
};

class SelectedCpu : public ::testing::TestWithParam<SelCase> {};

TEST_P(SelectedCpu, EveryServingKernelMatchesTheOracle) {
  const SelCase& c = GetParam();
  const Pattern pattern = pattern_for(c);
  const uint64_t seed = static_cast<uint64_t>(c.Lq * 7 + c.K);
  const Tensor<double> q = random_tensor({c.B, c.Hq, c.Lq, c.D}, seed);
  const Tensor<double> k = random_tensor({c.B, c.Hkv, c.Lk, c.D}, seed + 1);
  const Tensor<double> v = random_tensor({c.B, c.Hkv, c.Lk, c.Dv}, seed + 2);
  const Tensor<double> dout = random_tensor({c.B, c.Hq, c.Lq, c.Dv}, seed + 3);
  const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, nullptr);
  // The bf16 twins' oracle: the same formula on bfloat16(float32(x)) inputs.
  const Tensor<double> q16 = round_to_bfloat16(q), k16 = round_to_bfloat16(k),
                       v16 = round_to_bfloat16(v);
  const AttentionResult oracle_bf16 = a1_dense_masked(q16, k16, v16, pattern, nullptr);
  const Problem problem = make_problem(q, k, v, pattern, nullptr);
  int served = 0, served_bf16 = 0;
  for (const Kernel& kernel : kernels()) {
    if (kernel.target != Target::cpu || !kernel.exact || !kernel.serves(pattern) ||
        !kernel.serves_features(problem))
      continue;
    SCOPED_TRACE(kernel.name);
    const bool bf16 = kernel.dtype == DType::bfloat16;
    ++(bf16 ? served_bf16 : served);
    Output out;
    kernel.run(problem, out);
    const Tolerance tol{kernel.atol, kernel.rtol};
    const Tolerance want = bf16 ? kTolBfloat16 : kTolFloat32;  // nothing looser
    EXPECT_EQ(tol.atol, want.atol);
    EXPECT_EQ(tol.rtol, want.rtol);
    const AttentionResult& ref = bf16 ? oracle_bf16 : oracle;
    const CheckReport ro = check_close(out.o32, ref.o, tol);
    const CheckReport rl = check_close(out.lse32, ref.lse, tol);
    EXPECT_TRUE(ro.pass) << report_json(ro, "o", tol);
    EXPECT_TRUE(rl.pass) << report_json(rl, "lse", tol);
    // Bit-identical with another thread count.
    const int threads = omp_get_max_threads();
    omp_set_num_threads(threads == 1 ? 3 : 1);
    Output again;
    kernel.run(problem, again);
    omp_set_num_threads(threads);
    EXPECT_EQ(again.o32.data, out.o32.data);
    EXPECT_EQ(again.lse32.data, out.lse32.data);
  }
  EXPECT_GE(served, 1);       // cpu_k08_selected_gather at least
  EXPECT_GE(served_bf16, 1);  // cpu_k08_selected_gather_bf16 at least (k06's twin too
                              // when the lists are a plain layout)

  const GradientResult grad = b1_dense_masked_grad(q, k, v, dout, pattern, nullptr);
  const GradientResult grad_bf16 = b1_dense_masked_grad(q16, k16, v16, dout, pattern, nullptr);
  int grad_served = 0, grad_served_bf16 = 0;
  for (const GradKernel& kernel : grad_kernels()) {
    if (kernel.target != Target::cpu || !kernel.serves(pattern)) continue;
    if (((needed_features(problem.shape, problem.mods) | needed_pattern_features(pattern)) &
         ~kernel.features) != 0)
      continue;
    SCOPED_TRACE(kernel.name);
    const bool bf16 = kernel.dtype == DType::bfloat16;
    ++(bf16 ? grad_served_bf16 : grad_served);
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(kernel, gp);
    GradOutput out;
    kernel.run(gp, out);
    const Tolerance tol{kernel.atol, kernel.rtol};
    const Tolerance want = bf16 ? kTolBfloat16 : kTolFloat32;
    EXPECT_EQ(tol.atol, want.atol);
    EXPECT_EQ(tol.rtol, want.rtol);
    const GradientResult& g = bf16 ? grad_bf16 : grad;
    const CheckReport rq = check_close(out.dq32, g.dq, tol);
    const CheckReport rk = check_close(out.dk32, g.dk, tol);
    const CheckReport rv = check_close(out.dv32, g.dv, tol);
    EXPECT_TRUE(rq.pass) << report_json(rq, "dq", tol);
    EXPECT_TRUE(rk.pass) << report_json(rk, "dk", tol);
    EXPECT_TRUE(rv.pass) << report_json(rv, "dv", tol);
    // Structural zeros are exact (contract §7.2): dq of a row without an allowed key, dk and
    // dv of a key no query of its group selected. (A row with one key has dq = 0 in float64
    // too, but only up to rounding in float32: not structural.)
    const int64_t g_size = c.Hq / c.Hkv;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.Hq; ++h)
        for (int64_t i = 0; i < c.Lq; ++i) {
          bool any = false;
          for (int64_t j = 0; j < c.Lk; ++j) any |= pattern.allowed(b, h, i, j);
          if (any) continue;
          for (int64_t d = 0; d < c.D; ++d)
            EXPECT_EQ(out.dq32.data[static_cast<size_t>(((b * c.Hq + h) * c.Lq + i) * c.D + d)], 0.0f);
        }
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t hk = 0; hk < c.Hkv; ++hk)
        for (int64_t j = 0; j < c.Lk; ++j) {
          bool any = false;
          for (int64_t h = hk * g_size; h < (hk + 1) * g_size; ++h)
            for (int64_t i = 0; i < c.Lq; ++i) any |= pattern.allowed(b, h, i, j);
          if (any) continue;
          for (int64_t d = 0; d < c.Dv; ++d)
            EXPECT_EQ(out.dv32.data[static_cast<size_t>(((b * c.Hkv + hk) * c.Lk + j) * c.Dv + d)], 0.0f);
          for (int64_t d = 0; d < c.D; ++d)
            EXPECT_EQ(out.dk32.data[static_cast<size_t>(((b * c.Hkv + hk) * c.Lk + j) * c.D + d)], 0.0f);
        }
    const int threads = omp_get_max_threads();
    omp_set_num_threads(threads == 1 ? 3 : 1);
    GradOutput again;
    kernel.run(gp, again);
    omp_set_num_threads(threads);
    EXPECT_EQ(again.dq32.data, out.dq32.data);
    EXPECT_EQ(again.dk32.data, out.dk32.data);
    EXPECT_EQ(again.dv32.data, out.dv32.data);
  }
  EXPECT_GE(grad_served, 1);       // cpu_kb03_selected_gather_grad
  EXPECT_EQ(grad_served_bf16, 1);  // cpu_kb03_selected_gather_grad_bf16
}

INSTANTIATE_TEST_SUITE_P(Grid, SelectedCpu, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<SelCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(SelectedCpu, LayoutKernelsRefuseCountedOrPerBatchSelectionsByName) {
  // k06 reads head(h)'s layout only: a counted repeat or batch element 1's own list would
  // be another pattern there, so Kernel::run refuses before any work, naming the feature.
  for (const SelCase& c : {kCases[1], kCases[8]}) {
    const Pattern pattern = pattern_for(c);
    ASSERT_TRUE(pattern.needs_selection_kernel()) << c.name;
    const Problem problem =
        make_problem(random_tensor({c.B, c.Hq, c.Lq, c.D}, 1), random_tensor({c.B, c.Hkv, c.Lk, c.D}, 2),
                     random_tensor({c.B, c.Hkv, c.Lk, c.Dv}, 3), pattern, nullptr);
    Output out;
    try {
      find_kernel("cpu_k06_generic_tiles").run(problem, out);
      ADD_FAILURE() << "k06 ran " << c.name;
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), Field::impl);
      EXPECT_NE(std::string(e.what()).find("per-batch or counted selections"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu_k08_selected_gather"), std::string::npos)
          << e.what();
    }
  }
  // A set-semantics list shared by the batch is an ordinary layout: k06 serves it too.
  const Pattern plain = pattern_for(kCases[3]);
  EXPECT_FALSE(plain.needs_selection_kernel());
}

TEST(SelectedCpu, KernelOnlyServesSelected) {
  PatternSpec w;
  w.kind = PatternKind::window;
  w.window = 2;
  const Pattern window = materialize(w, {1, 1, 8, 8});
  for (const char* name : {"cpu_k08_selected_gather", "cpu_k08_selected_gather_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    EXPECT_FALSE(kernel.serves(window));
    // Handed one anyway, it refuses naming the pattern and itself (never another answer).
    const Problem problem =
        make_problem(random_tensor({1, 1, 8, 4}, 1), random_tensor({1, 1, 8, 4}, 2),
                     random_tensor({1, 1, 8, 4}, 3), window, nullptr);
    Output out;
    try {
      kernel.run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "pattern");
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  for (const char* name : {"cpu_kb03_selected_gather_grad", "cpu_kb03_selected_gather_grad_bf16"})
    EXPECT_FALSE(find_grad_kernel(name).serves(window)) << name;
}

// The bf16 twins are the float32 kernels' code on widened inputs: on inputs bfloat16 holds
// exactly, they agree with the float32 kernels bit for bit, forward and backward (the same
// float32 arithmetic in the same order). A twin that widened wrongly, or walked the pattern
// differently, would differ.
TEST(SelectedCpu, Bf16TwinsEqualFloat32OnBf16ExactInputs) {
  const SelCase& c = kCases[11];  // heavy_overlap_counted: GQA, causal, padding, repeats
  const Pattern pattern = pattern_for(c);
  const Tensor<double> q = round_to_bfloat16(random_tensor({c.B, c.Hq, c.Lq, c.D}, 5));
  const Tensor<double> k = round_to_bfloat16(random_tensor({c.B, c.Hkv, c.Lk, c.D}, 6));
  const Tensor<double> v = round_to_bfloat16(random_tensor({c.B, c.Hkv, c.Lk, c.Dv}, 7));
  const Tensor<double> dout = random_tensor({c.B, c.Hq, c.Lq, c.Dv}, 8);
  const Problem problem = make_problem(q, k, v, pattern, nullptr);
  Output f32, b16;
  find_kernel("cpu_k08_selected_gather").run(problem, f32);
  find_kernel("cpu_k08_selected_gather_bf16").run(problem, b16);
  EXPECT_EQ(b16.o32.data, f32.o32.data);
  EXPECT_EQ(b16.lse32.data, f32.lse32.data);
  GradOutput g32, g16;
  for (auto [name, out] : {std::pair{"cpu_kb03_selected_gather_grad", &g32},
                           {"cpu_kb03_selected_gather_grad_bf16", &g16}}) {
    const GradKernel& kernel = find_grad_kernel(name);
    GradProblem gp = make_grad_problem(problem, dout);
    save_forward(kernel, gp);
    kernel.run(gp, *out);
  }
  EXPECT_EQ(g16.dq32.data, g32.dq32.data);
  EXPECT_EQ(g16.dk32.data, g32.dk32.data);
  EXPECT_EQ(g16.dv32.data, g32.dv32.data);
}

}  // namespace
}  // namespace sparseattn
