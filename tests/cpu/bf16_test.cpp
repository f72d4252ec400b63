// Checks contract §4.3 (bf16 inputs: rounding to bfloat16, and what the bf16 CPU entries feed).
// core/bfloat16.h's round to nearest even on hand-computed bit patterns (ties both ways,
// ±0, ±inf, NaN, denormals, overflow, float64 inputs rounded through float32), and the
// registry's bf16 CPU entries: they round with exactly that function (a problem and its
// pre-rounded copy give bit-identical outputs), and refuse an input bfloat16 cannot hold;
// the same for the selected-attention twins (cpu_k08_selected_gather_bf16 and its backward
// cpu_kb03_selected_gather_grad_bf16). Oracle agreement and thread-count determinism:
// cpu_kernels_test.cpp, cpu_selected_test.cpp and cpu_determinism_test.cpp, which cover
// the bf16 entries with the others.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/error.h"
#include "reference/attention.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "registry/backward.h"
#include "registry/registry.h"
#include "tests/cpu/output_diff.h"
#include "tests/reference/grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
uint16_t round_bits(uint32_t b) { return float_to_bfloat16(from_bits(b)); }

TEST(Bfloat16Rounding, ExactValuesKeepTheirTopHalf) {
  EXPECT_EQ(round_bits(0x3F800000u), 0x3F80u);  // 1
  EXPECT_EQ(round_bits(0xBFC00000u), 0xBFC0u);  // -1.5
  EXPECT_EQ(round_bits(0x00000000u), 0x0000u);  // +0
  EXPECT_EQ(round_bits(0x80000000u), 0x8000u);  // -0 keeps its sign
  EXPECT_EQ(round_bits(0x7F800000u), 0x7F80u);  // +inf
  EXPECT_EQ(round_bits(0xFF800000u), 0xFF80u);  // -inf
  EXPECT_EQ(round_bits(0x7F7F0000u), 0x7F7Fu);  // the largest finite bfloat16
  EXPECT_EQ(bfloat16_to_float(0x7F7Fu), static_cast<float>(kBfloat16Max));
}

TEST(Bfloat16Rounding, TiesGoToEvenAndNonTiesToNearest) {
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): down.
  EXPECT_EQ(round_bits(0x3F808000u), 0x3F80u);
  // 1 + 3·2^-8 lies halfway between 0x3F81 (odd) and 0x3F82 (even): up.
  EXPECT_EQ(round_bits(0x3F818000u), 0x3F82u);
  // One float ulp either side of the tie: to the nearer neighbour.
  EXPECT_EQ(round_bits(0x3F808001u), 0x3F81u);
  EXPECT_EQ(round_bits(0x3F807FFFu), 0x3F80u);
  // Negative ties likewise (the sign does not take part).
  EXPECT_EQ(round_bits(0xBF808000u), 0xBF80u);
  EXPECT_EQ(round_bits(0xBF818000u), 0xBF82u);
  // A carry into the exponent: 2 - 2^-9 (0x3FFF8000, tie, 0x3FFF odd) rounds up to 2.
  EXPECT_EQ(round_bits(0x3FFF8000u), 0x4000u);
  // 1/3 = 0x3EAAAAAB in float32 -> 0x3EAB (0.333984375).
  EXPECT_EQ(float_to_bfloat16(1.0f / 3.0f), 0x3EABu);
  EXPECT_EQ(round_to_bfloat16(1.0 / 3.0), 0.333984375);
}

TEST(Bfloat16Rounding, OverflowRoundsToInfinityExactlyAsIeee) {
  EXPECT_EQ(round_bits(0x7F7F7FFFu), 0x7F7Fu);  // below the tie: the largest finite
  EXPECT_EQ(round_bits(0x7F7F8000u), 0x7F80u);  // the tie, 0x7F7F odd: up to +inf
  EXPECT_EQ(float_to_bfloat16(FLT_MAX), 0x7F80u);
  EXPECT_EQ(float_to_bfloat16(-FLT_MAX), 0xFF80u);
}

TEST(Bfloat16Rounding, DenormalsRoundLikeAnyOtherValue) {
  // bfloat16's smallest denormal is 0x0001 = 2^-133, float32's 2^-149.
  EXPECT_EQ(bfloat16_to_float(0x0001u), std::ldexp(1.0f, -133));
  EXPECT_EQ(round_bits(0x00010000u), 0x0001u);  // 2^-133 exactly
  EXPECT_EQ(round_bits(0x00000001u), 0x0000u);  // 2^-149: to zero
  EXPECT_EQ(round_bits(0x00008000u), 0x0000u);  // 2^-134: the tie 0 / 2^-133, to even 0
  EXPECT_EQ(round_bits(0x00018000u), 0x0002u);  // 1.5·2^-133: the tie, to even 2·2^-133
  EXPECT_EQ(round_bits(0x80018000u), 0x8002u);
  EXPECT_EQ(round_bits(0x007FFFFFu), 0x0080u);  // the largest float denormal: up to FLT_MIN
}

TEST(Bfloat16Rounding, NanStaysNanAndQuiet) {
  EXPECT_EQ(round_bits(0x7FC00000u), 0x7FC0u);  // the canonical quiet NaN
  EXPECT_EQ(round_bits(0xFFC00000u), 0xFFC0u);  // its sign is kept
  EXPECT_EQ(round_bits(0x7F800001u), 0x7FC0u);  // a signalling NaN, payload in the low half
  EXPECT_EQ(round_bits(0x7FFFFFFFu), 0x7FFFu);  // rounding would carry it into the sign
  EXPECT_TRUE(std::isnan(bfloat16_to_float(round_bits(0x7F800001u))));
}

// Every bfloat16 survives the trip through float32 unchanged (NaNs come back quiet).
TEST(Bfloat16Rounding, EveryBfloat16RoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const bool nan = (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0;
    const uint16_t want = static_cast<uint16_t>(nan ? (h | 0x0040u) : h);
    ASSERT_EQ(float_to_bfloat16(bfloat16_to_float(static_cast<uint16_t>(h))), want) << h;
  }
}

// A float64 is rounded to float32 first (Problem::q32), then to bfloat16: 1 + 2^-8 + 2^-30
// becomes the float32 1 + 2^-8, a tie that goes to 1 — where rounding the double directly
// would give 1 + 2^-7. The CUDA entries round the same way (float first).
TEST(Bfloat16Rounding, Float64RoundsThroughFloat32) {
  EXPECT_EQ(round_to_bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)), 1.0);
  EXPECT_EQ(round_to_bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20)),
            1.0 + std::ldexp(1.0, -7));
}

// The engines this CPU can run: (isa, force widening; false: force the dot engine, AMX:
// force nothing, where the process takes the AMX engine).
struct EngineRun {
  cpu::Isa isa;
  bool widen;
  bool amx = false;
};
std::vector<EngineRun> engines() {
  std::vector<EngineRun> e;
  for (const cpu::Isa isa : cpu::supported_isas()) {
    e.push_back({isa, true});
    if (isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16()) e.push_back({isa, false});
    if (isa == cpu::Isa::avx512 && cpu::bf16_amx_engine_selected()) e.push_back({isa, false, true});
  }
  return e;
}

// The entry rounds with float_to_bfloat16: its output on the raw inputs and on inputs
// rounded beforehand (which the entry's rounding leaves unchanged) are bit-identical, for
// every bf16 entry and engine. A different rounding (truncation, ties away) would differ
// for some of the 3·2·150·17 elements.
TEST(Bf16Entries, RoundInputsToNearestEvenThemselves) {
  using testing_grid::token;
  const PatternSpec spec = token(PatternKind::window, 20, 1, false, 16);
  const Pattern pattern = materialize(spec, {1, 2, 150, 150});
  const Tensor<double> q = testing_inputs::random_tensor({1, 2, 150, 17}, 21);
  const Tensor<double> k = testing_inputs::random_tensor({1, 2, 150, 17}, 22);
  const Tensor<double> v = testing_inputs::random_tensor({1, 2, 150, 17}, 23);
  const Problem raw = make_problem(q, k, v, pattern, nullptr);
  const Problem rounded = make_problem(round_to_bfloat16(q), round_to_bfloat16(k),
                                       round_to_bfloat16(v), pattern, nullptr);
  int runs = 0;
  for (const Kernel& kernel : kernels()) {
    if (kernel.dtype != DType::bfloat16 || kernel.target != Target::cpu) continue;
    if (!kernel.serves(pattern)) continue;
    SCOPED_TRACE(kernel.name);
    for (const EngineRun& run : engines()) {
      const cpu::ScopedIsa forced(run.isa);
      std::optional<cpu::ScopedBf16Widen> forced_widen;
      std::optional<cpu::ScopedBf16Dot> forced_dot;  // whatever engine this process chose
      if (run.widen) forced_widen.emplace();
      else if (!run.amx) forced_dot.emplace();  // engines(): only with AVX512-BF16
      SCOPED_TRACE(std::string(cpu::isa_name(run.isa)) + " " + cpu::bf16_engine());
      Output a, b;
      kernel.run(raw, a);
      kernel.run(rounded, b);
      ASSERT_EQ(a.o32.data, b.o32.data);
      ASSERT_EQ(a.lse32.data, b.lse32.data);
      ++runs;
    }
  }
  EXPECT_GE(runs, 3);  // k02, k03, k06 at least
}

// A finite float32 beyond bfloat16's largest finite value would become inf: refused,
// naming the tensor, before anything is computed (contract §5: never a silent NaN).
TEST(Bf16Entries, RefuseAnInputBeyondBfloat16Range) {
  using testing_grid::token;
  const Pattern pattern = materialize(token(PatternKind::dense, 0, 1, false, 64), {1, 1, 8, 8});
  Tensor<double> v = testing_inputs::random_tensor({1, 1, 8, 4}, 3);
  v.data[5] = 3.4e38;  // float32 holds it (< 3.40282e38); bfloat16 rounds it to inf
  const Problem problem = make_problem(testing_inputs::random_tensor({1, 1, 8, 4}, 1),
                                       testing_inputs::random_tensor({1, 1, 8, 4}, 2), v,
                                       pattern, nullptr);
  for (const char* name : {"cpu_k01_dense_flash_bf16", "cpu_k06_generic_tiles_bf16"}) {
    SCOPED_TRACE(name);
    Output out;
    try {
      find_kernel(name).run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "v");
      EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
    }
  }
  // The float32 kernel holds the same value.
  Output out;
  find_kernel("cpu_k01_dense_flash").run(problem, out);
  EXPECT_TRUE(std::isfinite(out.o32.data[1]));
}

// A selected pattern (contract §3.16) for the selected twins: per-batch lists of 12 keys
// over 40, repeats counted, GQA (4 query heads on 2 kv heads sharing one list per kv head).
Pattern selected_pattern() {
  PatternSpec s;
  s.kind = PatternKind::selected;
  s.duplicates = Duplicates::count;
  Tensor<int64_t> t({2, 2, 40, 12});
  for (size_t e = 0; e < t.data.size(); ++e)
    t.data[e] = e % 5 == 2 ? -1 : static_cast<int64_t>((e * 2654435761u) % 40);
  s.kv_indices = std::move(t);
  return materialize(s, {2, 4, 40, 40});
}

// The selected twins round with float_to_bfloat16 too, forward and backward: raw inputs
// and inputs rounded beforehand give bit-identical o, lse, dq, dk, dv. (Truncating v
// instead, or leaving one input at float32, would differ for some of the 2·2·40·17 values.)
TEST(Bf16Entries, SelectedTwinsRoundInputsToNearestEvenThemselves) {
  const Pattern pattern = selected_pattern();
  const Tensor<double> q = testing_inputs::random_tensor({2, 4, 40, 17}, 31);
  const Tensor<double> k = testing_inputs::random_tensor({2, 2, 40, 17}, 32);
  const Tensor<double> v = testing_inputs::random_tensor({2, 2, 40, 17}, 33);
  const Tensor<double> dout = testing_inputs::random_tensor({2, 4, 40, 17}, 34);
  const Problem raw = make_problem(q, k, v, pattern, nullptr);
  const Problem rounded = make_problem(round_to_bfloat16(q), round_to_bfloat16(k),
                                       round_to_bfloat16(v), pattern, nullptr);
  const Kernel& forward = find_kernel("cpu_k08_selected_gather_bf16");
  Output a, b;
  forward.run(raw, a);
  forward.run(rounded, b);
  EXPECT_EQ(a.o32.data, b.o32.data);
  EXPECT_EQ(a.lse32.data, b.lse32.data);
  const GradKernel& backward = find_grad_kernel("cpu_kb03_selected_gather_grad_bf16");
  GradProblem ga = make_grad_problem(raw, dout), gb = make_grad_problem(rounded, dout);
  save_forward(backward, ga);
  save_forward(backward, gb);
  ASSERT_EQ(ga.o32.data, gb.o32.data);  // the forward above, through its registry twin
  GradOutput da, db;
  backward.run(ga, da);
  backward.run(gb, db);
  EXPECT_EQ(da.dq32.data, db.dq32.data);
  EXPECT_EQ(da.dk32.data, db.dk32.data);
  EXPECT_EQ(da.dv32.data, db.dv32.data);
  // And rounding does change the answer here: the float32 kernel differs on the raw inputs.
  Output f32;
  find_kernel("cpu_k08_selected_gather").run(raw, f32);
  EXPECT_NE(f32.o32.data, a.o32.data);
}

// A value beyond bfloat16's range is refused naming the tensor by both selected twins,
// before anything is computed. (v: in q or k the float32 guard's score bound refuses it
// first, naming the scale.)
TEST(Bf16Entries, SelectedTwinsRefuseAnInputBeyondBfloat16Range) {
  const Pattern pattern = selected_pattern();
  Tensor<double> v = testing_inputs::random_tensor({2, 2, 40, 8}, 3);
  v.data[77] = -3.4e38;  // float32 holds it; bfloat16 rounds it to -inf
  const Problem problem = make_problem(testing_inputs::random_tensor({2, 4, 40, 8}, 1),
                                       testing_inputs::random_tensor({2, 2, 40, 8}, 2), v,
                                       pattern, nullptr);
  try {
    Output out;
    find_kernel("cpu_k08_selected_gather_bf16").run(problem, out);
    ADD_FAILURE() << "forward: no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "v");
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
  // The backward, handed the float32 forward's o and lse (its own forward refuses).
  GradProblem gp = make_grad_problem(problem, testing_inputs::random_tensor({2, 4, 40, 8}, 4));
  Output saved;
  find_kernel("cpu_k08_selected_gather").run(problem, saved);
  gp.o32 = saved.o32;
  gp.lse32 = saved.lse32;
  try {
    GradOutput out;
    find_grad_kernel("cpu_kb03_selected_gather_grad_bf16").run(gp, out);
    ADD_FAILURE() << "backward: no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "v");
    EXPECT_NE(std::string(e.what()).find("cpu_kb03_selected_gather_grad_bf16"),
              std::string::npos)
        << e.what();
  }
}

// The engine rule (kernels_bf16.h's choose_bf16_engine) on synthetic rates: the dot engine
// exactly when vdpbf16ps reaches kBf16DotMinRatio = 0.75 of the FMA's FLOP rate, both
// sides of the threshold and the two measured machines (Zen 5 ~1.0, the Intel Xeon 0.50).
TEST(Bf16Engine, AutoChoosesDotFromThreeQuartersOfTheFmaRate) {
  EXPECT_EQ(cpu::kBf16DotMinRatio, 0.75);
  struct Case {
    double ratio;
    const char* override;
    cpu::Bf16Engine want;
  };
  for (const Case& c : {Case{1.0, nullptr, cpu::Bf16Engine::dot},
                        Case{0.50, nullptr, cpu::Bf16Engine::widen},
                        Case{0.75, "auto", cpu::Bf16Engine::dot},
                        Case{0.7499, "", cpu::Bf16Engine::widen},
                        Case{0.7501, "auto", cpu::Bf16Engine::dot},
                        Case{2.0, nullptr, cpu::Bf16Engine::dot},
                        Case{0.0, nullptr, cpu::Bf16Engine::widen}}) {
    SCOPED_TRACE(c.ratio);
    const cpu::Bf16EngineChoice got = cpu::choose_bf16_engine(c.ratio, c.override);
    EXPECT_EQ(got.engine, c.want);
    ASSERT_TRUE(got.dot_vs_fma.has_value());
    EXPECT_EQ(*got.dot_vs_fma, c.ratio);
  }
  EXPECT_EQ(cpu::choose_bf16_engine(0.98, nullptr).reason, "vdpbf16ps 0.98× the FMA FLOP rate");
  EXPECT_EQ(cpu::choose_bf16_engine(0.5, nullptr).reason, "vdpbf16ps 0.50× the FMA FLOP rate");
  // No AVX512-BF16: nothing measured, widening.
  const cpu::Bf16EngineChoice none = cpu::choose_bf16_engine(std::nullopt, "auto");
  EXPECT_EQ(none.engine, cpu::Bf16Engine::widen);
  EXPECT_FALSE(none.dot_vs_fma.has_value());
  EXPECT_EQ(none.reason, "no AVX512-BF16");
}

// SPARSEATTN_BF16_ENGINE=dot|widen wins over the rates either way and says so.
TEST(Bf16Engine, OverrideWinsOverTheRates) {
  const cpu::Bf16EngineChoice widen = cpu::choose_bf16_engine(1.0, "widen");
  EXPECT_EQ(widen.engine, cpu::Bf16Engine::widen);
  EXPECT_EQ(widen.reason, "SPARSEATTN_BF16_ENGINE; vdpbf16ps 1.00× the FMA FLOP rate");
  const cpu::Bf16EngineChoice dot = cpu::choose_bf16_engine(0.5, "dot");
  EXPECT_EQ(dot.engine, cpu::Bf16Engine::dot);
  EXPECT_EQ(dot.reason, "SPARSEATTN_BF16_ENGINE; vdpbf16ps 0.50× the FMA FLOP rate");
  const cpu::Bf16EngineChoice plain = cpu::choose_bf16_engine(std::nullopt, "widen");
  EXPECT_EQ(plain.engine, cpu::Bf16Engine::widen);
  EXPECT_EQ(plain.reason, "SPARSEATTN_BF16_ENGINE; no AVX512-BF16");
}

// Any other value, and "dot" on a CPU without AVX512-BF16, is refused naming the variable
// and the values allowed (contract §5: one clear line, never a silent fallback).
TEST(Bf16Engine, BadOverrideIsRefusedNamingTheVariable) {
  for (const char* bad : {"fast", "DOT", "dot ", "1"}) {
    SCOPED_TRACE(bad);
    try {
      cpu::choose_bf16_engine(1.0, bad);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "SPARSEATTN_BF16_ENGINE");
      EXPECT_EQ(e.value(), bad);
      EXPECT_EQ(e.allowed(), "must be auto, dot or widen");
    }
  }
  try {
    cpu::choose_bf16_engine(std::nullopt, "dot");
    ADD_FAILURE() << "dot without AVX512-BF16: no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "SPARSEATTN_BF16_ENGINE");
    EXPECT_EQ(e.allowed(), "this CPU has no AVX512-BF16 (allowed here: auto or widen)");
  }
}

// This process's choice is the rule applied to its own measurement and environment, fixed
// after the first call; bf16_engine() reports it in the avx512 build, "widen" in the avx2
// build, and follows the tests' switches. (ctest also runs this binary's Bf16Engine tests
// with SPARSEATTN_BF16_ENGINE=dot and =widen.)
TEST(Bf16Engine, ProcessChoiceFollowsTheRuleTheBuildAndTheSwitches) {
  const char* env = std::getenv("SPARSEATTN_BF16_ENGINE");
  const bool bf16 = cpu::cpu_has_avx512_bf16();
  std::optional<cpu::Bf16EngineChoice> want;
  try {
    want = cpu::choose_bf16_engine(bf16 ? std::optional<double>(1.0) : std::nullopt, env);
  } catch (const InvalidArgument&) {
    // Refused, as the rule is: by the choice, the report and a bf16 kernel in either build.
    EXPECT_THROW(cpu::bf16_engine_choice(), InvalidArgument);
    using testing_grid::token;
    const Pattern pattern = materialize(token(PatternKind::dense, 0, 1, false, 64), {1, 1, 8, 8});
    const Problem problem = make_problem(testing_inputs::random_tensor({1, 1, 8, 4}, 1),
                                         testing_inputs::random_tensor({1, 1, 8, 4}, 2),
                                         testing_inputs::random_tensor({1, 1, 8, 4}, 3),
                                         pattern, nullptr);
    for (const cpu::Isa isa : cpu::supported_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      const cpu::ScopedIsa forced(isa);
      EXPECT_THROW(cpu::bf16_engine_summary(), InvalidArgument);
      Output out;
      try {
        find_kernel("cpu_k01_dense_flash_bf16").run(problem, out);
        ADD_FAILURE() << "the kernel ran";
      } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.argument(), "SPARSEATTN_BF16_ENGINE");
      }
    }
    return;
  }
  const cpu::Bf16EngineChoice& choice = cpu::bf16_engine_choice();
  EXPECT_EQ(&choice, &cpu::bf16_engine_choice());  // made once
  ASSERT_EQ(choice.dot_vs_fma.has_value(), bf16);
  if (bf16) {
    // A ratio, not a timing artefact: the machines measured give 0.5 and ~1.
    EXPECT_GT(*choice.dot_vs_fma, 0.1);
    EXPECT_LT(*choice.dot_vs_fma, 10.0);
  }
  const cpu::Bf16EngineChoice rule = cpu::choose_bf16_engine(choice.dot_vs_fma, env);
  EXPECT_EQ(choice.engine, rule.engine);
  EXPECT_EQ(choice.reason, rule.reason);
  // A named engine keeps AMX off; otherwise AMX runs wherever it can (bf16_amx_engine_selected).
  const std::string value = env ? env : "";
  EXPECT_EQ(choice.overridden, value == "dot" || value == "widen");
  const bool amx = !choice.overridden && cpu::amx_available();
  EXPECT_EQ(cpu::bf16_amx_engine_selected(), amx);
  const bool dot = choice.engine == cpu::Bf16Engine::dot;
  const char* automatic = amx ? "amx" : dot ? "dot" : "widen";
  const std::string why = " (" + std::string(amx ? "AMX-BF16; " : "") + choice.reason + ")";
  for (const cpu::Isa isa : cpu::supported_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    const cpu::ScopedIsa forced(isa);
    const bool avx512 = isa == cpu::Isa::avx512;
    EXPECT_STREQ(cpu::bf16_engine(), avx512 ? automatic : "widen");
    EXPECT_EQ(cpu::bf16_engine_summary(),
              avx512 ? std::string(automatic) + why : "widen (avx2 build)");
    {
      const cpu::ScopedBf16Widen widen;
      EXPECT_STREQ(cpu::bf16_engine(), "widen");
    }
    if (bf16) {
      const cpu::ScopedBf16Dot forced_dot;
      EXPECT_STREQ(cpu::bf16_engine(), avx512 ? "dot" : "widen");
    } else {
      EXPECT_THROW(cpu::set_bf16_force_dot(true), InvalidArgument);
    }
    EXPECT_STREQ(cpu::bf16_engine(), avx512 ? automatic : "widen");  // switches undone
  }
}

// bf16_engine() names the engine the kernels run: the engines round differently (the dot
// engine rounds P to bf16, AMX sums in another order), so the entry's output without a
// switch is bit-identical to its output with the reported engine forced, and (with
// AVX512-BF16) differs from the other; the AMX engine, which no switch forces, differs from
// both.
TEST(Bf16Engine, ReportedEngineIsTheOneThatRuns) {
  try {
    cpu::bf16_engine_choice();
  } catch (const InvalidArgument& e) {  // the refusal is ProcessChoice…'s to check
    GTEST_SKIP() << e.what();
  }
  using testing_grid::token;
  const Pattern pattern = materialize(token(PatternKind::dense, 0, 1, false, 64), {1, 2, 96, 96});
  const Problem problem = make_problem(testing_inputs::random_tensor({1, 2, 96, 64}, 31),
                                       testing_inputs::random_tensor({1, 2, 96, 64}, 32),
                                       testing_inputs::random_tensor({1, 2, 96, 64}, 33),
                                       pattern, nullptr);
  const Kernel& kernel = find_kernel("cpu_k01_dense_flash_bf16");
  for (const cpu::Isa isa : cpu::supported_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    const cpu::ScopedIsa forced(isa);
    const std::string reported = cpu::bf16_engine();
    Output automatic, widened, dotted;
    kernel.run(problem, automatic);
    {
      const cpu::ScopedBf16Widen widen;
      kernel.run(problem, widened);
    }
    if (isa != cpu::Isa::avx512 || !cpu::cpu_has_avx512_bf16()) {
      EXPECT_EQ(reported, "widen");
      EXPECT_EQ(automatic.o32.data, widened.o32.data);
      continue;
    }
    {
      const cpu::ScopedBf16Dot dot;
      kernel.run(problem, dotted);
    }
    ASSERT_NE(dotted.o32.data, widened.o32.data);  // the observation can tell them apart
    if (reported == "amx") {
      EXPECT_NE(automatic.o32.data, dotted.o32.data);
      EXPECT_NE(automatic.o32.data, widened.o32.data);
      continue;
    }
    EXPECT_EQ(automatic.o32.data, reported == "dot" ? dotted.o32.data : widened.o32.data)
        << "reported " << reported;
    EXPECT_EQ(automatic.lse32.data, reported == "dot" ? dotted.lse32.data : widened.lse32.data);
  }
}

// Where the CPU has AMX-BF16 (cpuid leaf 7, XCR0), Linux grants the tile state and the
// avx512 build's bf16 kernels choose the AMX engine. (Where it lacks AMX this is a skip,
// never a pass: nothing about the AMX engine is known then.)
TEST(Bf16AmxEngine, IsChosenWhereTheCpuHasAmx) {
  if (!cpu::isa_supported(cpu::Isa::avx512) || !cpu::cpu_has_amx_bf16() ||
      !cpu::cpu_has_avx512_bf16())
    GTEST_SKIP() << "this CPU lacks AMX-BF16 (cpuid leaf 7 EDX bits 22/24, XCR0 bits 17-18) "
                    "or AVX512-BF16: the AMX engine cannot run here";
  EXPECT_TRUE(cpu::amx_permission()) << "arch_prctl(ARCH_REQ_XCOMP_PERM) refused the tile state";
  EXPECT_TRUE(cpu::amx_permission());  // cached: asking twice gives the same answer
  EXPECT_TRUE(cpu::amx_available());
  if (cpu::bf16_engine_choice().overridden)
    GTEST_SKIP() << "SPARSEATTN_BF16_ENGINE names an engine: AMX stays off in this process";
  const cpu::ScopedIsa forced(cpu::Isa::avx512);
  EXPECT_TRUE(cpu::bf16_amx_engine_selected());
  EXPECT_STREQ(cpu::bf16_engine(), "amx");
  // And the kernels run it: the tile unit sums a row's products in another order than
  // vdpbf16ps's lanes, so the AMX and dot outputs differ in some last bits (each within
  // kTolBfloat16 of the oracle, cpu_kernels_test). A dispatch that ignored the choice
  // would give identical outputs.
  const Problem problem = testing_cpu::two_paths_problem();
  const Kernel& k01 = find_kernel("cpu_k01_dense_flash_bf16");
  Output amx, dot;
  k01.run(problem, amx);
  {
    const cpu::ScopedBf16Dot forced_dot;
    k01.run(problem, dot);
  }
  ASSERT_EQ(amx.o32.data.size(), dot.o32.data.size());
  const testing_cpu::OutputDiff diff = testing_cpu::output_diff(amx.o32, dot.o32);
  EXPECT_GT(diff.differ, 0u) << "the AMX and dot engines gave bit-identical outputs";
  EXPECT_LT(diff.worst, 1e-5);  // summation order only: 3e-8 when written
}

Tensor<double> to_double(const Tensor<float>& t) {
  Tensor<double> d(t.shape);
  for (size_t i = 0; i < t.data.size(); ++i) d.data[i] = t.data[i];
  return d;
}

// The AMX engine against the dot engine (and both against the oracle on bf16-rounded
// inputs) where its tiles have edges: 1..17 query rows (a part of a 16-row group, one
// more than a group), chunks of 1..64 keys (one, two, a partial C tile), head_dim 1, 3,
// 17, 33 (pairs % 16 = 1, 2, 9, 1: the tail tiles), 96, 128 (whole A tiles). k01 (dense)
// reads its chunks in place, on a panel block; k02 (a window band) starts them off the
// blocks, on odd keys too (K copied, V re-paired). Each pair of outputs within
// kTolBfloat16; the AMX output is also checked against the oracle.
TEST(Bf16AmxEngine, AgreesWithTheDotEngineOnEdgeShapes) {
  if (!cpu::isa_supported(cpu::Isa::avx512) || !cpu::bf16_amx_engine_selected())
    GTEST_SKIP() << "this CPU (or OS) cannot run the AMX engine, or SPARSEATTN_BF16_ENGINE "
                    "names another: nothing to compare";
  using testing_grid::token;
  const cpu::ScopedIsa forced(cpu::Isa::avx512);
  // One thread: 13056 tiny calls, whose OpenMP barriers would spin on a loaded machine
  // (the outputs do not depend on it: CpuDeterminism).
  struct OneThread {
    int saved = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(saved); }  // also when an ASSERT returns early
  } one_thread;
  const Kernel& k01 = find_kernel("cpu_k01_dense_flash_bf16");
  const Kernel& k02 = find_kernel("cpu_k02_window_band_bf16");
  const Tolerance tol = kTolBfloat16;
  int compared = 0;
  for (const int64_t head_dim : {1, 3, 17, 33, 96, 128}) {
    for (int64_t rows = 1; rows <= 17; ++rows) {
      for (int64_t nc = 1; nc <= 64; ++nc) {
        // k01: rows queries over nc keys, one chunk. k02: a causal band of nc keys over
        // rows queries and 37 + nc keys, so the tile's chunk starts at key 37 - ... (odd
        // and even starts as nc and rows vary).
        const int64_t seq_len_k2 = 37 + nc;
        const struct {
          const Kernel* kernel;
          PatternSpec spec;
          int64_t seq_len_k;
        } cases[] = {
            {&k01, token(PatternKind::dense, 0, 1, false, 64), nc},
            {&k02, token(PatternKind::window, nc - 1, 1, true, 64), seq_len_k2},
        };
        for (const auto& c : cases) {
          SCOPED_TRACE(testing::Message() << c.kernel->name << " head_dim " << head_dim
                                          << " rows " << rows << " keys " << c.seq_len_k
                                          << " nc " << nc);
          const uint64_t seed = static_cast<uint64_t>(head_dim * 100000 + rows * 100 + nc);
          const Pattern pattern = materialize(c.spec, {1, 1, rows, c.seq_len_k});
          const Tensor<double> q = round_to_bfloat16(
              testing_inputs::random_tensor({1, 1, rows, head_dim}, seed));
          const Tensor<double> k = round_to_bfloat16(
              testing_inputs::random_tensor({1, 1, c.seq_len_k, head_dim}, seed + 1));
          const Tensor<double> v = round_to_bfloat16(
              testing_inputs::random_tensor({1, 1, c.seq_len_k, head_dim}, seed + 2));
          const Problem problem = make_problem(q, k, v, pattern, nullptr);
          Output amx, dot;
          ASSERT_STREQ(cpu::bf16_engine(), "amx");
          c.kernel->run(problem, amx);
          {
            const cpu::ScopedBf16Dot forced_dot;
            ASSERT_STREQ(cpu::bf16_engine(), "dot");
            c.kernel->run(problem, dot);
          }
          const CheckReport o = check_close(amx.o32, to_double(dot.o32), tol);
          const CheckReport lse = check_close(amx.lse32, to_double(dot.lse32), tol);
          ASSERT_TRUE(o.pass) << report_json(o, "o", tol);
          ASSERT_TRUE(lse.pass) << report_json(lse, "lse", tol);
          const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, nullptr);
          const CheckReport o_ref = check_close(amx.o32, oracle.o, tol);
          ASSERT_TRUE(o_ref.pass) << report_json(o_ref, "o", tol);
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 6 * 17 * 64 * 2);
}

}  // namespace
}  // namespace sparseattn
