// Checks contract §4.3 and §4.7 (every CUDA kernel against the oracle at its dtype's tolerance).
// Every CUDA kernel of the registry against the float64 oracle a1_dense_masked, over the
// awkward-shape grid of tests/cpu/cpu_cases.h plus shapes sized for the GPU blocks, at
// the tolerance the kernel declares — exactly kTolFloat32, kTolFloat16 or kTolBfloat16
// by its dtype (core/numerics.h), nothing looser. Half-precision kernels are compared
// with the oracle evaluated on the same rounded inputs (round_like_device).
//
// Without a device the comparisons GTEST_SKIP() << "no CUDA device" (CTest reports them
// as skipped, never passed); the registry, refusal and no-device tests run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/check.h"
#include "core/error.h"
#include "core/field.h"
#include "optimized/cuda/decode_plan.h"
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/device_runtime.h"
#include "optimized/cuda/packed_pattern.h"
#include "reference/attention.h"
#include "registry/registry.h"
#include "tests/cpu/cpu_cases.h"
#include "tests/reference/modern_grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::Case;
using testing_grid::make_case;
using testing_grid::token;
using testing_inputs::random_tensor;

std::vector<const Kernel*> cuda_kernels() {
  std::vector<const Kernel*> list;
  for (const Kernel& k : kernels())
    if (k.target == Target::cuda) list.push_back(&k);
  return list;
}

Tolerance tolerance_of(DType dtype) {
  switch (dtype) {
    case DType::float16: return kTolFloat16;
    case DType::bfloat16: return kTolBfloat16;
    default: return kTolFloat32;
  }
}

// The kernels that must serve a pattern: c08 always, the specialized ones for their kind;
// c09 (decode) every dense, window and chunked pattern without key padding, as its CPU twin;
// c11 (packed batches) the same patterns (their rows are one progression, decode_row.h).
std::set<std::string> expected_servers(const Pattern& p) {
  std::set<std::string> names = {"cuda_c08_generic_f32", "cuda_c08_generic_bf16"};
  const PatternSpec& s = p.spec;
  if ((s.kind == PatternKind::dense || s.kind == PatternKind::window || s.kind == PatternKind::chunked) &&
      !p.has_key_padding())
    names.insert({"cuda_c09_decode_f32", "cuda_c09_decode_bf16", "cuda_c11_varlen_f32", "cuda_c11_varlen_bf16"});
  switch (s.kind) {
    case PatternKind::dense:
      names.insert({"cuda_c01_naive_dense", "cuda_c02_tiled_dense", "cuda_c03_flash_dense",
                    "cuda_c04_flash_dense_f16", "cuda_c04_flash_dense_bf16"});
      break;
    case PatternKind::window: names.insert({"cuda_c05_window_f32", "cuda_c05_window_bf16"}); break;
    case PatternKind::longformer:
      if (!s.causal && p.sizes.seq_len_q == p.sizes.seq_len_k)
        names.insert({"cuda_c06_longformer_f32", "cuda_c06_longformer_bf16"});
      break;
    case PatternKind::bigbird:  // ITC blocks are always whole tiles
      names.insert({"cuda_c07_bigbird_f32", "cuda_c07_bigbird_bf16"});
      break;
    case PatternKind::bigbird_etc:  // whole tiles only when the global tokens fill whole blocks
      if (cuda::all_tiles_full(p)) names.insert({"cuda_c07_bigbird_f32", "cuda_c07_bigbird_bf16"});
      break;
    case PatternKind::selected: names.insert("cuda_c10_selected_gather_f32"); break;
    default: break;
  }
  return names;
}

TEST(CudaRegistry, LadderIsRegisteredWithItsDtypesTolerance) {
  const std::vector<const Kernel*> list = cuda_kernels();
  ASSERT_EQ(list.size(), 18u);
  for (const Kernel* k : list) {
    SCOPED_TRACE(k->name);
    EXPECT_TRUE(k->exact);
    EXPECT_STREQ(k->reference, "a1_dense_masked");
    EXPECT_NE(k->dtype, DType::float64);
    EXPECT_EQ(k->atol, tolerance_of(k->dtype).atol);
    EXPECT_EQ(k->rtol, tolerance_of(k->dtype).rtol);
  }
}

// A selected case (contract §3.16): table [1, hsel, lq, kk] of entries in [−1, lk), about
// one in five −1 and repeats likely, from a fixed generator.
Case selected_case(int64_t batch, int64_t heads, int64_t lq, int64_t lk, int64_t d, int64_t dv, int64_t kk,
                   int64_t hsel, bool causal) {
  PatternSpec s;
  s.kind = PatternKind::selected;
  s.causal = causal;
  Tensor<int64_t> t({1, hsel, lq, kk});
  uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(lq * 131 + kk);
  for (int64_t& e : t.data) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t u = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(lk + lk / 4 + 1));
    e = u >= lk ? -1 : u;
  }
  s.kv_indices = std::move(t);
  Case c = make_case(s, {batch, heads, lq, lk, d, dv});
  c.name = "selected_H" + std::to_string(heads) + "_hsel" + std::to_string(hsel) + (causal ? "_causal" : "") +
           "_Lq" + std::to_string(lq) + "_Lk" + std::to_string(lk) + "_K" + std::to_string(kk);
  return c;
}

// The grid: the CPU grid, plus shapes sized for the GPU blocks (Br/Bc 32 and 64, head
// dims 64/128/256 for the tensor-core path, several query blocks with ragged ends,
// BigBird at block 64 with 3 random blocks as the benchmarks use it).
std::vector<Case> gpu_cases() {
  using K = PatternKind;
  std::vector<Case> c = testing_cpu::cpu_cases();
  c.push_back(make_case(token(K::dense, 0, 1, false, 64), {1, 2, 257, 257, 128, 128}));
  c.push_back(make_case(token(K::dense, 0, 1, true, 64), {1, 1, 130, 130, 256, 256}));
  c.push_back(make_case(token(K::dense, 0, 1, true, 64), {2, 2, 96, 200, 80, 24}, true));
  c.push_back(make_case(token(K::window, 256, 1, false, 64), {1, 2, 700, 700, 64, 64}));
  c.push_back(make_case(token(K::window, 33, 4, true, 64), {1, 1, 500, 500, 128, 128}));
  c.push_back(make_case(token(K::longformer, 64, 1, false, 64, {0, 1, 333, 599}), {1, 2, 600, 600, 128, 128}));
  c.push_back(make_case(testing_grid::bigbird(64, 3, 11), {1, 2, 1000, 1000, 128, 128}));
  c.push_back(make_case(testing_grid::bigbird(64, 3, 12), {2, 1, 640, 640, 64, 64}, true));
  // selected (contract §3.16) with one table for the batch and set semantics: c08 reads its
  // layout, c10 its lists (c10/CudaSelected.* adds the rest of the kind's grid).
  c.push_back(selected_case(1, 2, 70, 90, 32, 32, 24, 1, false));
  c.push_back(selected_case(2, 4, 130, 100, 64, 64, 40, 4, true));
  return c;
}

// The kernels named cuda_<family>_... (family: c01 ... c08).
bool in_family(const Kernel& k, const std::string& family) {
  return std::string(k.name).rfind("cuda_" + family + "_", 0) == 0;
}

// Which kernels serve each case, computed once (materializing every case's pattern).
struct ServedCase {
  Case c;
  std::set<std::string> served, expected;
};
const std::vector<ServedCase>& served_cases() {
  static const std::vector<ServedCase> all = [] {
    std::vector<ServedCase> out;
    for (const Case& c : gpu_cases()) {
      const Pattern pattern = materialize(c.spec, c.sizes);
      ServedCase sc{c, {}, expected_servers(pattern)};
      for (const Kernel* k : cuda_kernels())
        if (k->serves(pattern)) sc.served.insert(k->name);
      out.push_back(sc);
    }
    return out;
  }();
  return all;
}

// Each kernel serves exactly the patterns it claims, on every machine (no device needed).
class CudaServes : public ::testing::TestWithParam<ServedCase> {};
TEST_P(CudaServes, ServingKernelsAreTheExpectedOnes) {
  EXPECT_EQ(GetParam().served, GetParam().expected);
}
INSTANTIATE_TEST_SUITE_P(Grid, CudaServes, ::testing::ValuesIn(served_cases()),
                         [](const ::testing::TestParamInfo<ServedCase>& info) { return info.param.c.name; });

// One family's kernels against the oracle. Instantiated once per family (c01/..., c08/...)
// with only the cases some kernel of that family serves, so scripts/gpu_check.sh runs each
// family in its own process (--gtest_filter=c05/*): a fault that poisons one CUDA context
// cannot hide the other families' results.
// The block-sparse families (c06, c07, c08) also run every Longformer and BigBird case with
// the split-K path forced (split cap 1: each listed key tile its own part, merged by
// split_merge_kernel), named <case>_splitK: at these sizes the automatic plan splits
// nothing, and the path must not first run at the benchmarks' 65,536 tokens.
struct FamilyCase {
  std::string family;
  Case c;
  int64_t split_cap = 0;  // 0: the automatic plan
};
void PrintTo(const FamilyCase& fc, std::ostream* os) { *os << fc.family << "/" << fc.c.name; }
void PrintTo(const ServedCase& sc, std::ostream* os) { *os << sc.c.name; }
std::vector<FamilyCase> family_cases(const std::string& family) {
  std::vector<FamilyCase> out;
  const bool block_sparse = family == "c06" || family == "c07" || family == "c08";
  for (const ServedCase& sc : served_cases())
    for (const std::string& name : sc.served)
      if (name.rfind("cuda_" + family + "_", 0) == 0) {
        out.push_back(FamilyCase{family, sc.c});
        const PatternKind kind = sc.c.spec.kind;
        if (block_sparse && (kind == PatternKind::longformer || kind == PatternKind::bigbird ||
                             kind == PatternKind::bigbird_etc)) {
          FamilyCase split{family, sc.c, 1};
          split.c.name += "_splitK";
          out.push_back(split);
        }
        break;
      }
  return out;
}
std::string family_case_name(const ::testing::TestParamInfo<FamilyCase>& info) { return info.param.c.name; }

// Sets the process-wide split cap for one test, and restores it.
class SplitCapGuard {
 public:
  explicit SplitCapGuard(int64_t cap) : saved_(cuda::split_cap()) { cuda::set_split_cap(cap); }
  ~SplitCapGuard() { cuda::set_split_cap(saved_); }

 private:
  int64_t saved_;
};

class CudaVsOracle : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(CudaVsOracle, EveryServingKernelMatchesA1AtItsDtypesTolerance) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const Case& c = GetParam().c;
  const SplitCapGuard split(GetParam().split_cap);
  const Pattern pattern = materialize(c.spec, c.sizes);
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const PatternSizes& z = c.sizes;
  const Tensor<double> q = random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed);
  const Tensor<double> k = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1);
  const Tensor<double> v = random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2);
  const double* scale = std::isnan(c.scale) ? nullptr : &c.scale;
  const Problem problem = make_problem(q, k, v, pattern, scale);

  // float32: the oracle on the unrounded inputs; half: on the inputs as the kernel saw
  // them. One oracle per input dtype, shared by the kernels of that dtype.
  std::map<DType, AttentionResult> oracles;
  int ran = 0;
  for (const Kernel* kernel : cuda_kernels()) {
    if (!in_family(*kernel, GetParam().family) || !kernel->serves(pattern)) continue;
    SCOPED_TRACE(kernel->name);
    ++ran;
    if (!oracles.count(kernel->dtype))
      oracles[kernel->dtype] =
          kernel->dtype == DType::float32
              ? a1_dense_masked(q, k, v, pattern, scale)
              : a1_dense_masked(cuda::round_like_device(q, kernel->dtype), cuda::round_like_device(k, kernel->dtype),
                                cuda::round_like_device(v, kernel->dtype), pattern, scale);
    const AttentionResult& oracle = oracles[kernel->dtype];
    Output out;
    kernel->run(problem, out);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const CheckReport o = check_close(out.o32, oracle.o, tol);
    const CheckReport lse = check_close(out.lse32, oracle.lse, tol);
    EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
    // Same inputs, same bits: no atomics, no order that depends on scheduling.
    Output again;
    kernel->run(problem, again);
    EXPECT_EQ(again.o32.data, out.o32.data) << "not deterministic";
  }
  EXPECT_GT(ran, 0) << "no kernel of " << GetParam().family << " serves " << c.name;
}

INSTANTIATE_TEST_SUITE_P(c01, CudaVsOracle, ::testing::ValuesIn(family_cases("c01")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c02, CudaVsOracle, ::testing::ValuesIn(family_cases("c02")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c03, CudaVsOracle, ::testing::ValuesIn(family_cases("c03")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c04, CudaVsOracle, ::testing::ValuesIn(family_cases("c04")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c05, CudaVsOracle, ::testing::ValuesIn(family_cases("c05")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c06, CudaVsOracle, ::testing::ValuesIn(family_cases("c06")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c07, CudaVsOracle, ::testing::ValuesIn(family_cases("c07")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c08, CudaVsOracle, ::testing::ValuesIn(family_cases("c08")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c09, CudaVsOracle, ::testing::ValuesIn(family_cases("c09")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c10, CudaVsOracle, ::testing::ValuesIn(family_cases("c10")), family_case_name);
INSTANTIATE_TEST_SUITE_P(c11, CudaVsOracle, ::testing::ValuesIn(family_cases("c11")), family_case_name);

// Every kernel family has cases (a family left out of the grid would go untested silently).
TEST(CudaFamilies, EveryKernelFamilyHasOracleCases) {
  std::set<std::string> families;
  for (const Kernel* k : cuda_kernels()) families.insert(std::string(k->name).substr(5, 3));
  EXPECT_EQ(families, (std::set<std::string>{"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11"}));
  for (const std::string& f : families) EXPECT_FALSE(family_cases(f).empty()) << f;
}

Problem small_problem(const Pattern& pattern, int64_t head_dim) {
  const PatternSizes& z = pattern.sizes;
  return make_problem(random_tensor({1, z.num_heads, z.seq_len_q, head_dim}, 1),
                      random_tensor({1, z.num_heads, z.seq_len_k, head_dim}, 2),
                      random_tensor({1, z.num_heads, z.seq_len_k, head_dim}, 3), pattern, nullptr);
}

// contract §2.7-§2.9 on the device: every CUDA kernel whose entry lists a feature, on
// grouped and multi-query heads, L_q != L_k both ways, causal, key padding, each modifier
// alone and all together, against the oracle with the same modifiers at its tolerance.
// Real rows without keys keep lse = σ, padded rows -inf (checked by the comparison: the
// oracle holds those values and the checker requires -inf = -inf exactly).
// The oracle's inputs for a kernel of `dtype`: unrounded for float32, rounded as the device
// rounds them for the half-precision kernels.
Tensor<double> as_seen(const Tensor<double>& x, DType dtype) {
  return dtype == DType::float32 ? x : cuda::round_like_device(x, dtype);
}

struct ModernCudaCase {
  const char* name;
  int64_t B, Hq, Hkv, Lq, Lk, D;
  bool causal, padding, softcap, alibi, sinks;
};

class CudaModern : public ::testing::TestWithParam<ModernCudaCase> {};

TEST_P(CudaModern, EveryModernCudaKernelMatchesTheOracle) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const ModernCudaCase& c = GetParam();
  PatternSpec spec;
  spec.causal = c.causal;
  if (c.padding) {
    spec.key_padding_mask = Tensor<uint8_t>({c.B, c.Lk}, 1);
    for (int64_t j = c.Lk - 5; j < c.Lk; ++j) spec.key_padding_mask->data[j] = 0;
  }
  const Pattern pattern = materialize(spec, {c.B, c.Hq, c.Lq, c.Lk});
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const Tensor<double> q = random_tensor({c.B, c.Hq, c.Lq, c.D}, seed);
  const Tensor<double> k = random_tensor({c.B, c.Hkv, c.Lk, c.D}, seed + 1);
  const Tensor<double> v = random_tensor({c.B, c.Hkv, c.Lk, c.D}, seed + 2);
  ScoreMods mods;
  if (c.softcap) mods.softcap = 0.6;
  if (c.alibi) mods.alibi_slopes = random_tensor({c.B, c.Hq}, seed + 3, 0.0, 0.3);
  if (c.sinks) mods.sinks = random_tensor({c.Hq}, seed + 4);
  const Problem problem = make_problem(q, k, v, pattern, nullptr, mods);
  // float32: the oracle on the unrounded inputs; half (c04): on the inputs as the kernel saw
  // them, the modifiers unrounded (contract §2.8).
  std::map<DType, AttentionResult> oracles;
  int ran = 0;
  for (const Kernel* kernel : cuda_kernels()) {
    if (!kernel->serves(pattern) || !kernel->serves_features(problem)) continue;
    SCOPED_TRACE(kernel->name);
    ++ran;
    if (!oracles.count(kernel->dtype))
      oracles[kernel->dtype] = a1_dense_masked(as_seen(q, kernel->dtype), as_seen(k, kernel->dtype),
                                               as_seen(v, kernel->dtype), pattern, nullptr, mods);
    const AttentionResult& oracle = oracles[kernel->dtype];
    Output out;
    kernel->run(problem, out);
    const Tolerance tol{kernel->atol, kernel->rtol};
    const CheckReport o = check_close(out.o32, oracle.o, tol);
    const CheckReport lse = check_close(out.lse32, oracle.lse, tol);
    EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
  }
  EXPECT_GT(ran, 0) << "no CUDA kernel serves " << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Contract, CudaModern,
    ::testing::Values(
        ModernCudaCase{"gqa_g4", 1, 8, 2, 70, 70, 32, false, false, false, false, false},
        ModernCudaCase{"mqa_causal_lq_lt_lk", 2, 4, 1, 40, 97, 64, true, true, false, false, false},
        ModernCudaCase{"softcap", 1, 2, 2, 65, 65, 16, true, false, true, false, false},
        ModernCudaCase{"alibi_per_batch", 2, 2, 1, 33, 50, 16, true, false, false, true, false},
        ModernCudaCase{"sinks_lq_gt_lk", 1, 4, 2, 50, 31, 8, true, false, false, false, true},
        ModernCudaCase{"everything", 2, 8, 2, 77, 90, 32, true, true, true, true, true}),
    [](const ::testing::TestParamInfo<ModernCudaCase>& info) { return info.param.name; });

// contract §2.7-§2.9 on every pattern kind a modern CUDA kernel serves: the modern grid
// (tests/reference/modern_grid.h: g ∈ {1, 2, 4, 8}, H_kv = 1, L_q ≠ L_k, causal, key padding
// with padded queries, real rows without keys; dense, window (dilated too), longformer,
// bigbird, explicit, per-head; each modifier alone and all three), every kernel listing
// kModern that serves the pattern — float32 against the oracle, bf16/fp16 against the
// oracle on the rounded inputs — at its tolerance. The block-sparse cases run again with
// the split-K path forced (<case>_splitK): the parts leave the sink out and the merge adds
// it exactly once (a sink per part would count it `parts` times). Every CUDA kernel that
// serves the pattern, except c01 and c02, must list kModern.
struct ModernKindCase {
  testing_modern::ModernCase c;
  int64_t split_cap = 0;  // 0: the automatic plan
};
void PrintTo(const ModernKindCase& mc, std::ostream* os) { *os << mc.c.name; }
std::vector<ModernKindCase> modern_kind_cases() {
  std::vector<ModernKindCase> out;
  for (const testing_modern::ModernCase& c : testing_modern::modern_cases()) {
    out.push_back({c, 0});
    const PatternKind kind = c.base.spec.kind;
    if (kind == PatternKind::longformer || kind == PatternKind::bigbird || kind == PatternKind::per_head) {
      ModernKindCase split{c, 1};
      split.c.name += "_splitK";
      out.push_back(split);
    }
  }
  return out;
}

class CudaModernKinds : public ::testing::TestWithParam<ModernKindCase> {};

TEST_P(CudaModernKinds, EveryModernKernelServingThePatternMatchesTheOracle) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const testing_modern::ModernCase& c = GetParam().c;
  const SplitCapGuard split(GetParam().split_cap);
  const Pattern pattern = materialize(c.base.spec, c.base.sizes);
  const testing_modern::ModernInputs in = testing_modern::inputs_of(c);
  const ScoreMods mods = testing_modern::mods_of(c);
  const double* scale = std::isnan(c.base.scale) ? nullptr : &c.base.scale;
  const Problem problem = make_problem(in.q, in.k, in.v, pattern, scale, mods);
  std::map<DType, AttentionResult> oracles;
  int ran = 0;
  for (const Kernel* kernel : cuda_kernels()) {
    if (!kernel->serves(pattern)) continue;
    SCOPED_TRACE(kernel->name);
    const std::string name = kernel->name;
    if (name.rfind("cuda_c01_", 0) == 0 || name.rfind("cuda_c02_", 0) == 0) continue;
    ASSERT_EQ(kernel->features & kModern, kModern);  // c09 lists kKvCache | kPaged besides, c11 kVarlen
    ++ran;
    if (!oracles.count(kernel->dtype))
      oracles[kernel->dtype] = a1_dense_masked(as_seen(in.q, kernel->dtype), as_seen(in.k, kernel->dtype),
                                               as_seen(in.v, kernel->dtype), pattern, scale, mods);
    const AttentionResult& oracle = oracles[kernel->dtype];
    Output out;
    kernel->run(problem, out);
    const Tolerance tol{kernel->atol, kernel->rtol};
    ASSERT_EQ(tol.atol, tolerance_of(kernel->dtype).atol);
    ASSERT_EQ(tol.rtol, tolerance_of(kernel->dtype).rtol);
    const CheckReport o = check_close(out.o32, oracle.o, tol);
    const CheckReport lse = check_close(out.lse32, oracle.lse, tol);
    EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
  }
  EXPECT_GE(ran, 2) << "c08 f32 and bf16 serve every pattern";
}

INSTANTIATE_TEST_SUITE_P(Modern, CudaModernKinds, ::testing::ValuesIn(modern_kind_cases()),
                         [](const ::testing::TestParamInfo<ModernKindCase>& info) {
                           return info.param.c.name;
                         });

// Without the features a CUDA kernel refuses a modern problem by name, on every machine
// (the registry guard runs before any device is looked for).
TEST(CudaModernRefusal, KernelsWithoutTheFeatureRefuseByName) {
  const Pattern pattern = materialize(PatternSpec{}, {1, 4, 8, 8});
  ScoreMods mods;
  mods.sinks = random_tensor({4}, 1);
  const Problem problem = make_problem(random_tensor({1, 4, 8, 4}, 2), random_tensor({1, 2, 8, 4}, 3),
                                       random_tensor({1, 2, 8, 4}, 4), pattern, nullptr, mods);
  Output out;
  try {
    find_kernel("cuda_c01_naive_dense").run(problem, out);
    FAIL() << "c01 accepted sinks";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::impl);
    EXPECT_NE(std::string(e.what()).find("does not serve grouped-query heads, sinks"),
              std::string::npos) << e.what();
  }
}

// A kernel handed a pattern it does not serve refuses by name, on every machine.
TEST(CudaRefusal, UnservedPatternThrowsInvalidArgumentNamingPattern) {
  const Pattern pattern = materialize(testing_grid::bigbird(4, 1, 0), PatternSizes{1, 1, 16, 16});
  const Problem problem = small_problem(pattern, 4);
  for (const Kernel* kernel : cuda_kernels()) {
    if (kernel->serves(pattern)) continue;
    SCOPED_TRACE(kernel->name);
    Output out;
    try {
      kernel->run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument().rfind("pattern", 0), 0u) << e.what();
    }
  }
}

// Without a device, every kernel says so: RuntimeError("no CUDA device: ..."), no output.
TEST(CudaNoDevice, RunThrowsRuntimeErrorSayingNoDevice) {
  if (cuda::device_available()) GTEST_SKIP() << "a CUDA device is present";
  const PatternSizes sizes{1, 1, 16, 16};
  std::vector<Pattern> patterns;
  patterns.push_back(materialize(PatternSpec{}, sizes));
  patterns.push_back(materialize(token(PatternKind::window, 2, 1, false, 4), sizes));
  patterns.push_back(materialize(token(PatternKind::longformer, 2, 1, false, 4, {0}), sizes));
  patterns.push_back(materialize(testing_grid::bigbird(4, 1, 0), sizes));
  patterns.push_back(materialize(selected_case(1, 1, 16, 16, 4, 4, 3, 1, false).spec, sizes));
  for (const Kernel* kernel : cuda_kernels()) {
    SCOPED_TRACE(kernel->name);
    const Pattern* served = nullptr;
    for (const Pattern& p : patterns)
      if (served == nullptr && kernel->serves(p)) served = &p;
    ASSERT_NE(served, nullptr);
    const Problem problem = small_problem(*served, 4);
    Output out;
    try {
      kernel->run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(out.o32.empty());
  }
  // A packed batch (contract §2.10) reaches c11 whole (kVarlen), and says the same.
  const Pattern longest = materialize(PatternSpec{}, {1, 2, 3, 5});
  const Problem packed = make_varlen_problem(random_tensor({4, 2, 4}, 5), random_tensor({6, 2, 4}, 6),
                                             random_tensor({6, 2, 4}, 7), Varlen{{0, 3, 3, 4}, {0, 5, 5, 6}},
                                             longest, nullptr);
  for (const char* name : {"cuda_c11_varlen_f32", "cuda_c11_varlen_bf16"}) {
    SCOPED_TRACE(name);
    Output out;
    try {
      find_kernel(name).run(packed, out);
      ADD_FAILURE() << "no exception";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
}

// head_dim beyond the flash blocks' 256: InvalidArgument naming head_dim, not a crash.
TEST(CudaBadInput, HeadDimAbove256IsRefusedByName) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const Pattern pattern = materialize(PatternSpec{}, PatternSizes{1, 1, 8, 8});
  const Problem problem = small_problem(pattern, 300);
  for (const char* name : {"cuda_c03_flash_dense", "cuda_c04_flash_dense_bf16", "cuda_c08_generic_f32"}) {
    SCOPED_TRACE(name);
    Output out;
    try {
      find_kernel(name).run(problem, out);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "head_dim");
    }
  }
}

}  // namespace
}  // namespace sparseattn
