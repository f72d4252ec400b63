// Checks contract §4.3 and §4.7 (every CPU kernel against the oracle at its dtype's tolerance).
// Every optimized CPU kernel of the registry against the float64 oracle a1_dense_masked,
// over tests/cpu/cpu_cases.h, in every SIMD build this CPU can run (optimized/cpu/isa.h),
// at the tolerance the kernel declares (which must be exactly kTolFloat32, or kTolBfloat16
// for the bf16 kernels — nothing looser). A bf16 kernel is compared with the oracle
// evaluated on the bf16-rounded inputs (docs/numerics.md), with each engine the CPU can
// run (kernels_bf16.h: AMX where the process takes it, dot where AVX512-BF16 exists,
// widening always). The kernel list
// comes from the registry, so a kernel added to registry/cpu_kernels.def is tested here
// without another list.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/error.h"
#include "reference/attention.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "registry/registry.h"
#include "tests/cpu/cpu_cases.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;
using testing_inputs::random_tensor;

std::vector<const Kernel*> cpu_kernels() {
  std::vector<const Kernel*> list;
  for (const Kernel& k : kernels())
    if (k.target == Target::cpu) list.push_back(&k);
  return list;
}

// The kernels that must serve a pattern: k06 always, the specialized ones for their kind;
// each float32 kernel's bf16 twin likewise.
std::set<std::string> expected_float32_servers(const PatternSpec& s) {
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
  // k09, decode (contract §2.11): dense, window and chunked without key padding.
  const bool decode_kind = s.kind == PatternKind::dense || s.kind == PatternKind::window ||
                           s.kind == PatternKind::chunked;
  if (decode_kind && !s.key_padding_mask && s.per_head.empty()) names.insert("cpu_k09_decode");
  return names;
}
std::set<std::string> expected_servers(const Pattern& p) {
  const PatternSpec& s = p.spec;
  std::set<std::string> names = expected_float32_servers(s);
  for (const std::string& n : expected_float32_servers(s)) names.insert(n + "_bf16");
  // k07, HF's listing (no bf16 twin): bigbird over a whole number of blocks, at least 5,
  // every draw made, no block listed twice. Seeded draws never repeat a listed block; the
  // grid's explicit tables do (a window block listed again: HF counts it twice, the
  // contract once), so only the seeded cases are served.
  const int64_t n = p.sizes.seq_len_q;
  if (s.kind == PatternKind::bigbird && !s.random_table && n % s.block_size == 0 &&
      n / s.block_size >= 5 && p.random_shortfall == 0)
    names.insert("cpu_k07_hf_listing");
  return names;
}

bool is_bf16(const Kernel& k) { return k.dtype == DType::bfloat16; }

// Nine float32 kernels at kTolFloat32; for each of k01..k06, k08 and k09 a bf16 twin
// `<name>_bf16` at kTolBfloat16 that serves the same pattern kinds and reads the same
// features (k07, HF's listing, has none).
TEST(CpuRegistry, LadderIsRegisteredWithItsDtypesTolerance) {
  const std::vector<const Kernel*> list = cpu_kernels();
  ASSERT_EQ(list.size(), 17u);
  int float32 = 0;
  for (const Kernel* k : list) {
    SCOPED_TRACE(k->name);
    EXPECT_TRUE(k->exact);
    EXPECT_STREQ(k->reference, "a1_dense_masked");
    if (!is_bf16(*k)) {
      ++float32;
      EXPECT_EQ(k->dtype, DType::float32);
      EXPECT_EQ(k->atol, kTolFloat32.atol);
      EXPECT_EQ(k->rtol, kTolFloat32.rtol);
      if (std::string(k->name) == "cpu_k07_hf_listing") continue;
      const Kernel& twin = find_kernel(std::string(k->name) + "_bf16");
      EXPECT_EQ(twin.dtype, DType::bfloat16);
      EXPECT_STREQ(twin.patterns, k->patterns);
      EXPECT_EQ(twin.features, k->features);
      continue;
    }
    EXPECT_EQ(k->atol, kTolBfloat16.atol);
    EXPECT_EQ(k->rtol, kTolBfloat16.rtol);
  }
  EXPECT_EQ(float32, 9);
}

// The bf16 engines this CPU can run, as (isa, force widening, AMX) runs: the widening
// engine in every build, the dot engine (forced) in the avx512 build where AVX512-BF16
// exists, the AMX engine (nothing forced) there where the process takes it.
struct Bf16Run {
  cpu::Isa isa;
  bool widen;
  bool amx = false;
};
std::vector<Bf16Run> bf16_runs() {
  std::vector<Bf16Run> runs;
  for (const cpu::Isa isa : cpu::supported_isas()) {
    runs.push_back({isa, true});
    if (isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16()) runs.push_back({isa, false});
    if (isa == cpu::Isa::avx512 && cpu::bf16_amx_engine_selected())
      runs.push_back({isa, false, true});
  }
  return runs;
}

class CpuVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(CpuVsOracle, EveryServingKernelMatchesA1AtItsDtypesTolerance) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const PatternSizes& z = c.sizes;
  Tensor<double> q = random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed);
  Tensor<double> k = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1);
  Tensor<double> v = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2);
  const double* scale = std::isnan(c.scale) ? nullptr : &c.scale;
  const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, scale);
  // The bf16 kernels' oracle: the same formula on bfloat16(float32(x)) inputs.
  const AttentionResult oracle_bf16 = a1_dense_masked(
      round_to_bfloat16(q), round_to_bfloat16(k), round_to_bfloat16(v), pattern, scale);
  const Problem problem = make_problem(q, k, v, pattern, scale);

  std::set<std::string> served;
  for (const Kernel* kernel : cpu_kernels()) {
    SCOPED_TRACE(kernel->name);
    if (!kernel->serves(pattern)) continue;
    served.insert(kernel->name);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const Tolerance want = is_bf16(*kernel) ? kTolBfloat16 : kTolFloat32;
    ASSERT_EQ(tol.atol, want.atol);
    ASSERT_EQ(tol.rtol, want.rtol);
    const AttentionResult& ref = is_bf16(*kernel) ? oracle_bf16 : oracle;
    std::vector<Bf16Run> runs;
    if (is_bf16(*kernel)) {
      runs = bf16_runs();
    } else {
      for (const cpu::Isa isa : cpu::supported_isas()) runs.push_back({isa, false});
    }
    for (const Bf16Run& run : runs) {
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
  // Served by the canonical spec (contract §3): dilation 4 over one token is dilation 1.
  EXPECT_EQ(served, expected_servers(pattern));
}

INSTANTIATE_TEST_SUITE_P(Grid, CpuVsOracle, ::testing::ValuesIn(testing_cpu::cpu_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A kernel handed a pattern it does not serve refuses by name, instead of computing some
// other pattern's answer.
TEST(CpuRefusal, UnservedPatternThrowsInvalidArgumentNamingPattern) {
  const Case c = testing_grid::make_case(testing_grid::bigbird(4, 1, 0), {1, 1, 16, 16, 4, 4});
  const Pattern pattern = materialize(c.spec, c.sizes);
  const Problem problem =
      make_problem(random_tensor({1, 1, 16, 4}, 1), random_tensor({1, 1, 16, 4}, 2),
                   random_tensor({1, 1, 16, 4}, 3), pattern, nullptr);
  for (const char* name : {"cpu_k01_dense_flash", "cpu_k02_window_band",
                           "cpu_k03_window_dilated", "cpu_k04_longformer",
                           "cpu_k01_dense_flash_bf16", "cpu_k02_window_band_bf16",
                           "cpu_k03_window_dilated_bf16", "cpu_k04_longformer_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    EXPECT_FALSE(kernel.serves(pattern));
    Output out;
    try {
      kernel.run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "pattern");
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sparseattn
