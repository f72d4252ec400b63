// Checks contract §2.7–§2.9 (grouped-query heads, softcap, ALiBi, sinks) and §4.3, §4.6 on
// the optimized CPU kernels whose registry entry lists those features: each within its
// registry tolerance of the oracle a1_dense_masked on the modern grid
// (tests/reference/modern_grid.h) — float32 against the oracle on the unrounded inputs,
// bf16 against the oracle on the bf16-rounded q, k, v (the modifiers stay float64 there and
// float32 in the kernel, contract §2.8) — in every SIMD build and bf16 engine this CPU runs;
// the sink's values on rows without keys (lse = σ, o = 0) and on padded queries
// (lse = -inf); bit-identical outputs for 1 and 3 threads; and a kernel without the
// features refusing such a problem by name (FieldError, Field::impl).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/field.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "reference/attention.h"
#include "registry/registry.h"
#include "tests/reference/modern_grid.h"

namespace sparseattn {
namespace {

using testing_modern::ModernCase;

bool is_bf16(const Kernel& k) { return k.dtype == DType::bfloat16; }

// The CPU kernels that read every feature of contract §2.7–§2.9.
std::vector<const Kernel*> modern_cpu_kernels() {
  std::vector<const Kernel*> list;
  for (const Kernel& k : kernels())
    if (k.target == Target::cpu && k.features == kModern) list.push_back(&k);
  return list;
}

// Which of them must serve a pattern: k06 always, the specialized ones for their kind,
// each with its bf16 twin. A kernel that gains the features is added here by hand, so
// that one cannot lose them silently.
std::set<std::string> expected_modern_servers(const PatternSpec& s) {
  std::set<std::string> names = {"cpu_k06_generic_tiles"};
  switch (s.kind) {
    case PatternKind::dense: names.insert("cpu_k01_dense_flash"); break;
    case PatternKind::window:
      names.insert("cpu_k03_window_dilated");
      if (s.dilation == 1) names.insert("cpu_k02_window_band");
      break;
    case PatternKind::longformer: names.insert("cpu_k04_longformer"); break;
    case PatternKind::bigbird:
    case PatternKind::bigbird_etc: names.insert("cpu_k05_bigbird_blocks"); break;
    default: break;
  }
  std::set<std::string> all = names;
  for (const std::string& n : names) all.insert(n + "_bf16");
  return all;
}

// (isa, force the widening bf16 engine, AMX) runs this CPU can run: a bf16 kernel runs
// widening, the dot engine (forced) where AVX512-BF16 exists and the AMX engine (nothing
// forced) where the process takes it.
struct IsaRun {
  cpu::Isa isa;
  bool widen;
  bool amx = false;
};
std::vector<IsaRun> runs_for(const Kernel& k) {
  std::vector<IsaRun> runs;
  for (const cpu::Isa isa : cpu::supported_isas()) {
    runs.push_back({isa, is_bf16(k)});
    if (is_bf16(k) && isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16())
      runs.push_back({isa, false});
    if (is_bf16(k) && isa == cpu::Isa::avx512 && cpu::bf16_amx_engine_selected())
      runs.push_back({isa, false, true});
  }
  return runs;
}

class ModernCpu : public ::testing::TestWithParam<ModernCase> {};

TEST_P(ModernCpu, EveryModernKernelMatchesA1AtItsDtypesTolerance) {
  const ModernCase& c = GetParam();
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  const ScoreMods mods = testing_modern::mods_of(c);
  const double* scale = std::isnan(c.base.scale) ? nullptr : &c.base.scale;
  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, pattern, scale, mods);
  const AttentionResult oracle_bf16 =
      a1_dense_masked(round_to_bfloat16(in.q), round_to_bfloat16(in.k), round_to_bfloat16(in.v),
                      pattern, scale, mods);
  const Problem problem = make_problem(in.q, in.k, in.v, pattern, scale, mods);

  std::set<std::string> served;
  for (const Kernel* kernel : modern_cpu_kernels()) {
    SCOPED_TRACE(kernel->name);
    if (!kernel->serves(pattern)) continue;
    ASSERT_TRUE(kernel->serves_features(problem));
    served.insert(kernel->name);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const Tolerance want = is_bf16(*kernel) ? kTolBfloat16 : kTolFloat32;
    ASSERT_EQ(tol.atol, want.atol);
    ASSERT_EQ(tol.rtol, want.rtol);
    const AttentionResult& ref = is_bf16(*kernel) ? oracle_bf16 : oracle;
    for (const IsaRun& run : runs_for(*kernel)) {
      SCOPED_TRACE(cpu::isa_name(run.isa));
      const cpu::ScopedIsa forced(run.isa);
      std::optional<cpu::ScopedBf16Widen> widen;
      std::optional<cpu::ScopedBf16Dot> dot;  // whatever engine this process chose
      if (run.widen) widen.emplace();
      else if (!run.amx && run.isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16()) dot.emplace();
      SCOPED_TRACE(is_bf16(*kernel) ? cpu::bf16_engine() : "float32");
      Output out;
      kernel->run(problem, out);
      const CheckReport o = check_close(out.o32, ref.o, tol);
      const CheckReport lse = check_close(out.lse32, ref.lse, tol);
      EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
      EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
    }
  }
  EXPECT_EQ(served, expected_modern_servers(pattern.spec));
}

INSTANTIATE_TEST_SUITE_P(Grid, ModernCpu, ::testing::ValuesIn(testing_modern::modern_cases()),
                         [](const ::testing::TestParamInfo<ModernCase>& info) {
                           return info.param.name;
                         });

// Dense causal, L_q = 70 > L_k = 40 (rows 0..29 sit before the first key: real rows with
// nothing allowed), H_q = 4 on H_kv = 2, batch 1 pads its last 3 keys and with them its last
// 3 queries. With sinks (and the other modifiers): o = 0 and lse = σ_h (float32's σ; the bf16
// dot engine works in base 2, σ·log2(e)·ln 2: a few ulps) on the rows without keys, and
// o = 0, lse = -inf on the padded queries, in every modern kernel serving dense.
TEST(ModernCpuSinks, RowsWithoutKeysEndAtTheSinkAndPaddedQueriesAtMinusInf) {
  PatternSpec spec;
  spec.causal = true;
  spec.key_padding_mask = Tensor<uint8_t>({2, 40}, 1);
  for (int64_t j = 37; j < 40; ++j) spec.key_padding_mask->data[40 + j] = 0;
  const Pattern pattern = materialize(spec, {2, 4, 70, 40});
  ScoreMods mods;
  mods.sinks = testing_inputs::random_tensor({4}, 4, -1.0, 2.0);
  mods.softcap = 1.5;
  mods.alibi_slopes = testing_inputs::random_tensor({2, 4}, 5, 0.0, 0.5);
  const Problem problem = make_problem(testing_inputs::random_tensor({2, 4, 70, 16}, 1),
                                       testing_inputs::random_tensor({2, 2, 40, 16}, 2),
                                       testing_inputs::random_tensor({2, 2, 40, 16}, 3), pattern,
                                       nullptr, mods);
  const float kNegInf = -std::numeric_limits<float>::infinity();
  int kernels_run = 0;
  for (const Kernel* kernel : modern_cpu_kernels()) {
    if (!kernel->serves(pattern)) continue;
    SCOPED_TRACE(kernel->name);
    for (const IsaRun& run : runs_for(*kernel)) {
      SCOPED_TRACE(cpu::isa_name(run.isa));
      const cpu::ScopedIsa forced(run.isa);
      std::optional<cpu::ScopedBf16Widen> widen;
      std::optional<cpu::ScopedBf16Dot> dot;  // whatever engine this process chose
      if (run.widen) widen.emplace();
      else if (!run.amx && run.isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16()) dot.emplace();
      Output out;
      kernel->run(problem, out);
      ++kernels_run;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t i = 0; i < 70; ++i) {
            const int64_t row = (b * 4 + h) * 70 + i;
            const bool no_key = i < 30, padded = b == 1 && i >= 67;
            if (!no_key && !padded) continue;
            SCOPED_TRACE(testing::Message() << "b " << b << " h " << h << " i " << i);
            for (int64_t d = 0; d < 16; ++d) ASSERT_EQ(out.o32.data[row * 16 + d], 0.0f);
            if (padded) {
              ASSERT_EQ(out.lse32.data[row], kNegInf);
            } else {
              const double sigma = mods.sinks->data[h];
              ASSERT_NEAR(out.lse32.data[row], sigma, 1e-6 * (1.0 + std::fabs(sigma)));
            }
          }
    }
  }
  EXPECT_GE(kernels_run, 4);  // k01, k06 and their bf16 twins at least
}

// contract §4.6 on the modern path: every modifier set, grouped heads, 1 and 3 threads give
// bit-identical outputs.
TEST(ModernCpuDeterminism, OneAndThreeThreadsAgreeBitForBit) {
  const PatternSpec spec = testing_grid::token(PatternKind::window, 30, 1, true, 64);
  const Pattern pattern = materialize(spec, {1, 4, 260, 260});
  ScoreMods mods;
  mods.softcap = 2.0;
  mods.alibi_slopes = testing_inputs::random_tensor({4}, 6, 0.0, 0.2);
  mods.sinks = testing_inputs::random_tensor({4}, 7);
  const Problem problem = make_problem(testing_inputs::random_tensor({1, 4, 260, 64}, 1),
                                       testing_inputs::random_tensor({1, 1, 260, 64}, 2),
                                       testing_inputs::random_tensor({1, 1, 260, 64}, 3), pattern,
                                       nullptr, mods);
  const int saved = omp_get_max_threads();
  for (const Kernel* kernel : modern_cpu_kernels()) {
    if (!kernel->serves(pattern)) continue;
    SCOPED_TRACE(kernel->name);
    omp_set_num_threads(1);
    Output one;
    kernel->run(problem, one);
    omp_set_num_threads(3);
    Output three;
    kernel->run(problem, three);
    EXPECT_EQ(one.o32.data, three.o32.data);
    EXPECT_EQ(one.lse32.data, three.lse32.data);
  }
  omp_set_num_threads(saved);
}

// A kernel whose entry does not list a feature refuses a problem needing it, before any
// work, naming the feature (registry/registry.h, Kernel::run): never plain attention for it.
TEST(ModernCpuRefusal, AKernelWithoutTheFeatureRefusesNamingIt) {
  const Pattern pattern = materialize(testing_grid::bigbird(16, 1, 3), {1, 4, 96, 96});
  const Tensor<double> q = testing_inputs::random_tensor({1, 4, 96, 8}, 1);
  const Tensor<double> k4 = testing_inputs::random_tensor({1, 4, 96, 8}, 2);
  const Tensor<double> k2 = testing_inputs::random_tensor({1, 2, 96, 8}, 3);
  struct Want {
    ScoreMods mods;
    bool grouped;
    const char* names;
  };
  std::vector<Want> wants(4);
  wants[0].grouped = true;
  wants[0].names = "grouped-query heads";
  wants[1].mods.softcap = 3.0;
  wants[1].names = "softcap";
  wants[2].mods.alibi_slopes = testing_inputs::random_tensor({4}, 4);
  wants[2].names = "ALiBi slopes";
  wants[3].mods.sinks = testing_inputs::random_tensor({4}, 5);
  wants[3].names = "sinks";
  for (const char* name : {"cpu_k07_hf_listing", "a5_flash_tiled"}) {
    const Kernel& kernel = find_kernel(name);
    ASSERT_EQ(kernel.features, kPlain) << name;
    for (const Want& w : wants) {
      SCOPED_TRACE(std::string(name) + ": " + w.names);
      const Tensor<double>& k = w.grouped ? k2 : k4;
      const Problem problem = make_problem(q, k, k, pattern, nullptr, w.mods);
      EXPECT_FALSE(kernel.serves_features(problem));
      Output out;
      try {
        kernel.run(problem, out);
        ADD_FAILURE() << "no exception";
      } catch (const FieldError& e) {
        EXPECT_EQ(e.field(), Field::impl);
        const std::string what = e.what();
        EXPECT_NE(what.find(std::string("does not serve ") + w.names), std::string::npos) << what;
        EXPECT_NE(what.find(name), std::string::npos) << what;
        // The refusal names the kernels that do serve it: k06 among them.
        EXPECT_NE(what.find("cpu_k06_generic_tiles"), std::string::npos) << what;
      }
      EXPECT_EQ(out.o32.numel(), 0);  // nothing written
    }
  }
}

// contract §4.5 for the modifiers: a value the float32 pipeline cannot carry is refused by the
// CPU entries, naming its field, never computed as something else (a softcap below
// float32's normal range would round to 0, "no cap"; a sink of 1e38 would give lse = inf).
TEST(ModernCpuRefusal, ModifiersBeyondFloat32AreRefusedNamingTheirField) {
  const Pattern pattern = materialize(PatternSpec{}, {1, 2, 8, 8});
  const Tensor<double> x = testing_inputs::random_tensor({1, 2, 8, 4}, 1);
  ScoreMods tiny_cap, huge_sink, huge_slope;
  tiny_cap.softcap = 1e-39;
  huge_sink.sinks = Tensor<double>({2}, 1e38);
  huge_slope.alibi_slopes = Tensor<double>({2}, 1e37);  // |a|·8 > 1e37
  const std::pair<const ScoreMods*, Field> cases[] = {
      {&tiny_cap, Field::softcap}, {&huge_sink, Field::sinks}, {&huge_slope, Field::alibi_slopes}};
  for (const char* name : {"cpu_k01_dense_flash", "cpu_k06_generic_tiles_bf16"}) {
    for (const auto& [mods, field] : cases) {
      SCOPED_TRACE(name);
      const Problem problem = make_problem(x, x, x, pattern, nullptr, *mods);
      Output out;
      try {
        find_kernel(name).run(problem, out);
        ADD_FAILURE() << "no exception";
      } catch (const FieldError& e) {
        EXPECT_EQ(e.field(), field) << e.what();
        EXPECT_NE(std::string(e.what()).find("for the CPU kernels"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace sparseattn
