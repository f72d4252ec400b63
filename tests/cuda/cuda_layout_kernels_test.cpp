// Checks contract §2.10 (packed batches), §2.11–§2.12 (KV cache, paged KV), §3.16–§3.17
// (selected, selected-blocks) and §4.3 on the CUDA kernels that read them: c11 (packed
// batches) against the oracle walked one sequence at a time, attend_varlen(a1_dense_masked,
// …), and c09 (decode, float32 and bf16) against the
// oracle through the layout walk, attend_cache(a1_dense_masked, …), at exactly kTolFloat32 /
// kTolBfloat16 (bf16: the oracle on the bf16-rounded inputs); c10 (token-level selected) and
// c08 (block-level selected, through the layout) against a1_dense_masked at their entries'
// tolerances. Part of cuda_kernels_test; each suite is instantiated under its family's name
// (c08/, c09/, c10/, c11/), so scripts/gpu_check.sh runs it in that family's process.
//
// Decode grid: contiguous caches and page pools (page sizes 16 and 7, shuffled pages, a page
// two elements share, −1 table entries past each length); cache_seqlens 0, 1, mid and
// L_cache (the capacity); L_q 1, 4, 16 and L_q > n_b; g ∈ {1, 8} (and 4); dense, causal,
// window (left/right, dilation) and chunked; softcap, ALiBi [H_q] / [B, H_q], sinks; the
// automatic split and a forced split of 3 keys (every row over many splits, merged with the
// sink once); bit-identical repeats. Slots no element reads hold NaN: a kernel that reads one
// fails the check.
//
// Packed grid (c11): empty sequences, one-token sequences, queries without keys, L_q < L_k and
// L_q > L_k per sequence; g ∈ {1, 8}; dense, causal, window (left/right, causal, dilation)
// and chunked; softcap, ALiBi [H_q] / [B, H_q], sinks; f32 and bf16 against the oracle walk.
//
// Without a device every comparison GTEST_SKIP() << "no CUDA device" (CTest: Skipped, never
// passed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "api/layout_walk.h"
#include "core/check.h"
#include "core/numerics.h"
#include "core/seeded_inputs.h"
#include "optimized/cuda/decode_plan.h"
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/device_runtime.h"
#include "reference/attention.h"
#include "registry/registry.h"
#include "tests/reference/grid.h"
#include "tests/api/cache_inputs.h"
#include "tests/reference/decode_specs.h"

namespace sparseattn {
namespace {

using testing_cache::kNaN;
using testing_cache::uniform;

// A float32-output kernel's o and lse within `tol` of the oracle's (`ref`: an Output or an
// AttentionResult, both with float64 o and lse).
template <class Ref>
void expect_close(const Output& out, const Ref& ref, const Tolerance& tol) {
  const CheckReport o = check_close(out.o32, ref.o, tol);
  const CheckReport lse = check_close(out.lse32, ref.lse, tol);
  EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
  EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
}

// A second run gives the same bits (no atomics, a fixed order).
void expect_same_bits(const Output& again, const Output& out) {
  EXPECT_EQ(again.o32.data, out.o32.data) << "not deterministic";
  EXPECT_EQ(again.lse32.data, out.lse32.data) << "not deterministic";
}

Tolerance tolerance_of(const Kernel& k) {
  const Tolerance want = k.dtype == DType::bfloat16 ? kTolBfloat16 : kTolFloat32;
  EXPECT_EQ(k.atol, want.atol) << k.name;
  EXPECT_EQ(k.rtol, want.rtol) << k.name;
  return want;
}

// ---------------------------------------------------------------- decode (c09)

using testing_spec::chunked;
using testing_spec::dense;
using testing_spec::window;

struct DecodeCase {
  std::string name;
  PatternSpec spec;
  int64_t hq, hkv, lq, d, dv;
  bool paged;
  int64_t page_size;     // paged only
  int mods;              // 0 none; 1 softcap + ALiBi [H_q]; 2 ALiBi [B, H_q] + sinks; 3 all three
  int64_t split = 0;     // forced split keys (0: automatic)
};
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

ScoreMods mods_of(int which, int64_t batch, int64_t hq, testing_inputs::TestRng& rng) {
  ScoreMods m;
  if (which == 1 || which == 3) m.softcap = which == 1 ? 1.5 : 0.7;
  if (which == 1) {
    m.alibi_slopes = Tensor<double>({hq});
    for (double& a : m.alibi_slopes->data) a = rng.uniform(0.0, 0.2);
  }
  if (which >= 2) {
    m.alibi_slopes = Tensor<double>({batch, hq});
    for (double& a : m.alibi_slopes->data) a = rng.uniform(-0.05, 0.2);
    m.sinks = Tensor<double>({hq});
    for (double& s : m.sinks->data) s = rng.uniform(-1.0, 3.0);
  }
  return m;
}

api::CacheInputs contiguous(const DecodeCase& c, const std::vector<int64_t>& seqlens, int64_t l_cache,
                            testing_inputs::TestRng& rng) {
  return testing_cache::contiguous_cache(c, seqlens, l_cache, rng);
}
api::CacheInputs paged(const DecodeCase& c, const std::vector<int64_t>& seqlens, int64_t max_pages,
                       testing_inputs::TestRng& rng) {
  return testing_cache::paged_cache(c, seqlens, c.page_size, max_pages, rng);
}

api::CacheInputs rounded(api::CacheInputs in, DType dtype) {
  in.q = cuda::round_like_device(in.q, dtype);
  in.k = cuda::round_like_device(in.k, dtype);
  in.v = cuda::round_like_device(in.v, dtype);
  return in;
}

// Sets the process-wide forced split of c09 for one test, and restores it.
class DecodeSplitGuard {
 public:
  explicit DecodeSplitGuard(int64_t keys) : saved_(cuda::decode_split_keys()) { cuda::set_decode_split_keys(keys); }
  ~DecodeSplitGuard() { cuda::set_decode_split_keys(saved_); }

 private:
  int64_t saved_;
};

std::vector<DecodeCase> decode_cases() {
  const std::vector<std::pair<std::string, PatternSpec>> specs = {
      {"dense", dense(false)},           {"causal", dense(true)},
      {"window_3_2", window(3, 2, 1, false)}, {"window_5_0_d2_causal", window(5, 0, 2, true)},
      {"window_inf_4_d3", window(-1, 4, 3, false)}, {"chunked_7", chunked(7, false)},
      {"chunked_100_causal", chunked(100, true)}};
  struct Shape5 { int64_t hq, hkv, lq, d, dv; };
  const Shape5 shapes[] = {{8, 8, 1, 16, 16}, {8, 1, 4, 64, 64}, {8, 1, 16, 128, 128}, {4, 2, 4, 19, 35}};
  std::vector<DecodeCase> out;
  for (const auto& [sname, spec] : specs)
    for (const Shape5& z : shapes)
      for (const bool pg : {false, true}) {
        DecodeCase c{sname, spec, z.hq, z.hkv, z.lq, z.d, z.dv, pg, pg ? (z.d == 19 ? 7 : 16) : 0,
                     static_cast<int>((out.size()) % 4)};
        c.name += "_g" + std::to_string(z.hq / z.hkv) + "_Lq" + std::to_string(z.lq) + "_D" + std::to_string(z.d) +
                  (pg ? "_paged" + std::to_string(c.page_size) : "_contiguous") + "_mods" + std::to_string(c.mods);
        out.push_back(c);
      }
  // Many splits: 3 keys each, so every row's keys span several splits (and pages).
  for (const bool pg : {false, true}) {
    DecodeCase c{"window_6_1_d2_split3", window(6, 1, 2, false), 8, 2, 4, 16, 16, pg, 8, 3, 3};
    c.name += pg ? "_paged8" : "_contiguous";
    out.push_back(c);
    DecodeCase d{"dense_split3_sinks", dense(false), 8, 1, 1, 32, 32, pg, 8, 2, 3};
    d.name += pg ? "_paged8" : "_contiguous";
    out.push_back(d);
  }
  return out;
}

class CudaDecodeCache : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(CudaDecodeCache, MatchesTheOracleThroughTheWalkAtItsEntrysTolerance) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const DecodeCase& c = GetParam();
  const DecodeSplitGuard split(c.split);
  testing_inputs::TestRng rng(testing_inputs::seed_of(c.name));
  // cache_seqlens 0, 1, a middle length and the capacity; L_q > n_b in element 1 when L_q > 1.
  const int64_t l_cache = c.split > 0 ? 48 : 600;
  const std::vector<int64_t> seqlens = {300 % l_cache + 1, 1, 0, l_cache};
  const int64_t max_pages = c.paged ? (l_cache + c.page_size - 1) / c.page_size : 0;
  std::vector<int64_t> lens = seqlens;
  if (c.paged) lens.back() = max_pages * c.page_size;  // the capacity of the table
  api::CacheInputs in = c.paged ? paged(c, lens, max_pages, rng) : contiguous(c, lens, l_cache, rng);
  in.spec = c.spec;
  in.mods = mods_of(c.mods, static_cast<int64_t>(lens.size()), c.hq, rng);
  for (const char* name : {"cuda_c09_decode_f32", "cuda_c09_decode_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    ASSERT_EQ(kernel.features, kModern | kKvCache | kPaged);
    const Tolerance tol = tolerance_of(kernel);
    const Output ref = api::attend_cache(find_kernel("a1_dense_masked"),
                                         kernel.dtype == DType::float32 ? in : rounded(in, kernel.dtype));
    const Output out = api::attend_cache(kernel, in);  // in place: the entry lists the features
    expect_close(out, ref, tol);
    expect_same_bits(api::attend_cache(kernel, in), out);
  }
}

INSTANTIATE_TEST_SUITE_P(c09, CudaDecodeCache, ::testing::ValuesIn(decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& info) { return info.param.name; });

// Rows without keys, exactly: n_b = 0, or p < 0 under causal (L_q 4 against 2 keys):
// o = 0 and lse = −∞, or σ_h with sinks (contract §2.3, §2.9).
// (Parameterized by the forced split only so that it is instantiated under c09/.)
class CudaDecodeRows : public ::testing::TestWithParam<int64_t> {};
TEST_P(CudaDecodeRows, RowsWithoutKeysAreExact) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const DecodeSplitGuard split(GetParam());
  testing_inputs::TestRng rng(testing_inputs::seed_of("cuda decode empty rows"));
  const DecodeCase c{"empty", dense(true), 4, 2, 4, 16, 16, false, 0, 0};
  api::CacheInputs in = contiguous(c, {0, 2}, 8, rng);
  in.spec = c.spec;
  for (const bool sinks : {false, true}) {
    if (sinks) in.mods.sinks = Tensor<double>({c.hq}, 0.25);
    const Output out = api::attend_cache(find_kernel("cuda_c09_decode_f32"), in);
    const float want = sinks ? 0.25f : -std::numeric_limits<float>::infinity();
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.lq; ++i)
        for (const int64_t b : {int64_t{0}, int64_t{1}}) {
          if (b == 1 && i >= 2) continue;
          const int64_t row = (b * c.hq + h) * c.lq + i;
          EXPECT_EQ(out.lse32.data[row], want) << b << " " << h << " " << i;
          for (int64_t x = 0; x < c.dv; ++x) EXPECT_EQ(out.o32.data[row * c.dv + x], 0.0f);
        }
  }
}
INSTANTIATE_TEST_SUITE_P(c09, CudaDecodeRows, ::testing::Values(int64_t{0}, int64_t{1}),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param == 0 ? std::string("automatic_split") : "split_1";
                         });

// ---------------------------------------------------------------- packed batches (c11)

// The packed batch of every c11 case (contract §2.10), lq/lk per sequence: 1/5 (one query),
// 0/4 (empty), 34/0 (queries, no keys), 65/131 (three tiles, L_q < L_k), 0/2, 40/7
// (L_q > L_k: causal rows before the first key), 1/1 (one token), 3/3, 0/0.
const std::vector<int64_t> kVarlenCuQ = {0, 1, 1, 35, 100, 100, 140, 141, 144, 144};
const std::vector<int64_t> kVarlenCuK = {0, 5, 9, 9, 140, 142, 149, 150, 153, 153};

struct VarlenCase {
  std::string name;
  PatternSpec spec;
  int64_t hq, hkv, d, dv;
  int mods;  // as DecodeCase::mods (ALiBi [B, H_q] indexes the sequences)
};
void PrintTo(const VarlenCase& c, std::ostream* os) { *os << c.name; }

std::vector<VarlenCase> varlen_cases() {
  const std::vector<std::pair<std::string, PatternSpec>> specs = {
      {"dense", dense(false)},
      {"causal", dense(true)},
      {"window_3_2", window(3, 2, 1, false)},
      {"window_16_0_causal", window(16, 0, 1, true)},
      {"window_5_0_d2_causal", window(5, 0, 2, true)},
      {"chunked_7_causal", chunked(7, true)}};
  struct Shape4 { int64_t hq, hkv, d, dv; };
  const Shape4 shapes[] = {{8, 8, 64, 64}, {8, 1, 32, 32}, {2, 2, 19, 35}};
  std::vector<VarlenCase> out;
  for (const auto& [sname, spec] : specs)
    for (const Shape4& z : shapes) {
      VarlenCase c{sname, spec, z.hq, z.hkv, z.d, z.dv, static_cast<int>(out.size() % 4)};
      c.name += "_g" + std::to_string(z.hq / z.hkv) + "_D" + std::to_string(z.d) + "_Dv" + std::to_string(z.dv) +
                "_mods" + std::to_string(c.mods);
      out.push_back(c);
    }
  return out;
}

api::VarlenInputs rounded(api::VarlenInputs in, DType dtype) {
  in.q = cuda::round_like_device(in.q, dtype);
  in.k = cuda::round_like_device(in.k, dtype);
  in.v = cuda::round_like_device(in.v, dtype);
  return in;
}

class CudaVarlen : public ::testing::TestWithParam<VarlenCase> {};

// c11 f32 and bf16 in one launch per batch (attend_varlen hands it the whole batch: its
// entry lists kVarlen) against the oracle walked one sequence at a time, at exactly the
// entry's tolerance (bf16: the oracle on the bf16-rounded inputs); bit-identical repeats.
TEST_P(CudaVarlen, MatchesTheOracleThroughTheWalkAtItsEntrysTolerance) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const VarlenCase& c = GetParam();
  testing_inputs::TestRng rng(testing_inputs::seed_of(c.name));
  api::VarlenInputs in;
  in.varlen = {kVarlenCuQ, kVarlenCuK};
  in.q = uniform({kVarlenCuQ.back(), c.hq, c.d}, rng);
  in.k = uniform({kVarlenCuK.back(), c.hkv, c.d}, rng);
  in.v = uniform({kVarlenCuK.back(), c.hkv, c.dv}, rng);
  in.spec = c.spec;
  in.mods = mods_of(c.mods, in.varlen.num_sequences(), c.hq, rng);
  for (const char* name : {"cuda_c11_varlen_f32", "cuda_c11_varlen_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    ASSERT_EQ(kernel.features, kModern | kVarlen);
    const Tolerance tol = tolerance_of(kernel);
    const Output ref = api::attend_varlen(find_kernel("a1_dense_masked"),
                                          kernel.dtype == DType::float32 ? in : rounded(in, kernel.dtype));
    const Output out = api::attend_varlen(kernel, in);
    ASSERT_EQ(out.o32.shape, ref.o.shape);
    ASSERT_EQ(out.lse32.shape, ref.lse.shape);
    expect_close(out, ref, tol);
    expect_same_bits(api::attend_varlen(kernel, in), out);
  }
}

INSTANTIATE_TEST_SUITE_P(c11, CudaVarlen, ::testing::ValuesIn(varlen_cases()),
                         [](const ::testing::TestParamInfo<VarlenCase>& info) { return info.param.name; });

// Rows without keys, exactly (contract §2.3, §2.9): sequence 2 (34 queries, no key) and, under
// causal, rows 0 .. 32 of sequence 5 (40 queries against 7 keys: p = i − 33 < 0) end at
// o = 0 and lse = −∞, or σ_h with sinks.
class CudaVarlenRows : public ::testing::TestWithParam<bool> {};
TEST_P(CudaVarlenRows, RowsWithoutKeysAreExact) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const bool sinks = GetParam();
  testing_inputs::TestRng rng(testing_inputs::seed_of("cuda varlen empty rows"));
  const int64_t hq = 4, hkv = 2, d = 16, tq = kVarlenCuQ.back();
  api::VarlenInputs in;
  in.varlen = {kVarlenCuQ, kVarlenCuK};
  in.q = uniform({tq, hq, d}, rng);
  in.k = uniform({kVarlenCuK.back(), hkv, d}, rng);
  in.v = uniform({kVarlenCuK.back(), hkv, d}, rng);
  in.spec = dense(true);
  if (sinks) in.mods.sinks = Tensor<double>({hq}, 0.25);
  const Output out = api::attend_varlen(find_kernel("cuda_c11_varlen_f32"), in);
  const float want = sinks ? 0.25f : -std::numeric_limits<float>::infinity();
  std::vector<int64_t> keyless;
  for (int64_t t = 1; t < 35; ++t) keyless.push_back(t);     // sequence 2
  for (int64_t t = 100; t < 133; ++t) keyless.push_back(t);  // sequence 5, rows 0 .. 32
  for (int64_t h = 0; h < hq; ++h)
    for (const int64_t t : keyless) {
      EXPECT_EQ(out.lse32.data[h * tq + t], want) << "head " << h << " packed row " << t;
      for (int64_t x = 0; x < d; ++x) EXPECT_EQ(out.o32.data[(t * hq + h) * d + x], 0.0f);
    }
  EXPECT_NE(out.lse32.data[133], want) << "row 33 of sequence 5 sits on key 0";
}
INSTANTIATE_TEST_SUITE_P(c11, CudaVarlenRows, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("sinks") : "no_sinks";
                         });

// ---------------------------------------------------------------- selected (c10) and selected-blocks (c08)

struct SelCase {
  const char* name;
  int64_t B, Hq, Hkv, Lq, Lk, D, Dv, K, hsel, bsel;
  bool causal, padding, count, overlap;
};
void PrintTo(const SelCase& c, std::ostream* os) { *os << c.name; }

// Entries in [−1, L_k): random (about one in five −1, repeats likely when K > L_k), or under
// `overlap` every query lists keys 1, 3, 3 and 5, then −1 (the heavy overlap of contract §7.9).
Tensor<int64_t> table_for(const SelCase& c) {
  Tensor<int64_t> t({c.bsel, c.hsel, c.Lq, c.K});
  uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(c.Lq * 131 + c.K);
  for (int64_t r = 0; r < c.bsel * c.hsel * c.Lq; ++r)
    for (int64_t s = 0; s < c.K; ++s) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const int64_t u = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(c.Lk + c.Lk / 4 + 1));
      int64_t e = u >= c.Lk ? -1 : u;
      if (c.overlap) {
        const int64_t fixed[] = {1, 3, 3, 5};
        e = s < 4 ? std::min(fixed[s], c.Lk - 1) : -1;
      }
      if (!c.overlap && r % 7 == 3) e = -1;  // an all −1 row now and then
      t.data[static_cast<size_t>(r * c.K + s)] = e;
    }
  return t;
}

const SelCase kSelCases[] = {
    {"k_beyond_lk", 2, 2, 2, 9, 7, 8, 5, 16, 2, 1, false, false, false, false},
    {"k_beyond_lk_counted", 2, 2, 2, 9, 7, 8, 5, 16, 2, 1, false, false, true, false},
    {"shared_list_gqa", 2, 8, 2, 17, 23, 16, 8, 6, 1, 1, false, false, false, false},
    {"shared_list_g8_wide", 1, 8, 1, 40, 300, 64, 64, 100, 1, 1, true, false, false, false},
    {"per_kv_head_gqa", 2, 6, 2, 17, 23, 16, 8, 6, 2, 1, true, false, false, false},
    {"per_query_head_gqa_counted", 1, 6, 3, 17, 23, 16, 8, 6, 6, 1, true, false, true, false},
    {"causal_lq_above_lk", 1, 2, 1, 19, 5, 8, 8, 7, 1, 1, true, false, false, false},
    {"padding_per_batch", 3, 4, 2, 13, 13, 8, 4, 6, 2, 3, false, true, false, false},
    {"padding_causal_counted", 2, 4, 1, 13, 13, 8, 4, 20, 1, 2, true, true, true, false},
    {"heavy_overlap_counted", 1, 4, 2, 40, 9, 16, 16, 6, 2, 1, true, true, true, true},
    {"head_dim_256", 1, 2, 2, 33, 70, 256, 256, 40, 2, 1, false, false, false, false},
};

class CudaSelected : public ::testing::TestWithParam<SelCase> {};

TEST_P(CudaSelected, GatherMatchesTheOracleAtItsEntrysTolerance) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const SelCase& c = GetParam();
  PatternSpec s;
  s.kind = PatternKind::selected;
  s.kv_indices = table_for(c);
  s.causal = c.causal;
  s.duplicates = c.count ? Duplicates::count : Duplicates::once;
  if (c.padding) s.key_padding_mask = testing_grid::key_padding(c.B, c.Lk, 977 + c.Lk);
  const Pattern pattern = materialize(s, {c.B, c.Hq, c.Lq, c.Lk});
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const Tensor<double> q = testing_inputs::random_tensor({c.B, c.Hq, c.Lq, c.D}, seed);
  const Tensor<double> k = testing_inputs::random_tensor({c.B, c.Hkv, c.Lk, c.D}, seed + 1);
  const Tensor<double> v = testing_inputs::random_tensor({c.B, c.Hkv, c.Lk, c.Dv}, seed + 2);
  const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, nullptr);
  const Problem problem = make_problem(q, k, v, pattern, nullptr);
  const Kernel& kernel = find_kernel("cuda_c10_selected_gather_f32");
  ASSERT_EQ(kernel.features, kGqa | kSelection);
  ASSERT_TRUE(kernel.serves(pattern));
  const Tolerance tol = tolerance_of(kernel);
  Output out;
  kernel.run(problem, out);
  expect_close(out, oracle, tol);
  Output again;
  kernel.run(problem, again);
  EXPECT_EQ(again.o32.data, out.o32.data) << "not deterministic";
}

INSTANTIATE_TEST_SUITE_P(c10, CudaSelected, ::testing::ValuesIn(kSelCases),
                         [](const ::testing::TestParamInfo<SelCase>& info) { return info.param.name; });

// Block-level selected (contract §3.17) on c08, which reads its materialized layout: whole
// tiles when b_q = b_k = the tile, bitmasks otherwise; causal and key padding per token.
struct BlockCase {
  const char* name;
  int64_t bq, bk, tile;
  bool causal, padding;
};
void PrintTo(const BlockCase& c, std::ostream* os) { *os << c.name; }

class CudaSelectedBlocks : public ::testing::TestWithParam<BlockCase> {};

TEST_P(CudaSelectedBlocks, GenericKernelMatchesTheOracleThroughTheLayout) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const BlockCase& c = GetParam();
  const int64_t B = 2, H = 4, Lq = 200, Lk = 230, D = 64, nq = (Lq + c.bq - 1) / c.bq, nk = (Lk + c.bk - 1) / c.bk;
  PatternSpec s;
  s.kind = PatternKind::selected_blocks;
  const SelCase rows{"blocks", 1, H, 2, nq, nk, D, D, 3, 2, 1, false, false, false, false};
  s.block_indices = table_for(rows);
  s.block_size_q = c.bq;
  s.block_size_k = c.bk;
  s.causal = c.causal;
  s.tile = c.tile;
  if (c.padding) s.key_padding_mask = testing_grid::key_padding(B, Lk, 977 + Lk);
  const Pattern pattern = materialize(s, {B, H, Lq, Lk});
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const Tensor<double> q = testing_inputs::random_tensor({B, H, Lq, D}, seed);
  const Tensor<double> k = testing_inputs::random_tensor({B, 2, Lk, D}, seed + 1);
  const Tensor<double> v = testing_inputs::random_tensor({B, 2, Lk, D}, seed + 2);
  const Problem problem = make_problem(q, k, v, pattern, nullptr);
  for (const char* name : {"cuda_c08_generic_f32", "cuda_c08_generic_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    const Tolerance tol = tolerance_of(kernel);
    const DType dt = kernel.dtype;
    const AttentionResult oracle =
        dt == DType::float32 ? a1_dense_masked(q, k, v, pattern, nullptr)
                             : a1_dense_masked(cuda::round_like_device(q, dt), cuda::round_like_device(k, dt),
                                               cuda::round_like_device(v, dt), pattern, nullptr);
    Output out;
    kernel.run(problem, out);
    expect_close(out, oracle, tol);
  }
}

INSTANTIATE_TEST_SUITE_P(c08, CudaSelectedBlocks,
                         ::testing::Values(BlockCase{"bq64_bk64_whole_tiles_causal", 64, 64, 64, true, false},
                                           BlockCase{"bq1_bk16_moba_like_causal", 1, 16, 64, true, true},
                                           BlockCase{"bq5_bk7_bitmasks", 5, 7, 32, false, true}),
                         [](const ::testing::TestParamInfo<BlockCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sparseattn
