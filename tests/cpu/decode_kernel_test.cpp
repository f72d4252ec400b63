// Checks contract §2.11–§2.12 (KV cache, paged KV), §2.7–§2.9 and §4.3 on the decode kernel
// cpu_k09_decode and its bf16 twin (optimized/cpu/decode.h): within the entry's tolerance (exactly
// kTolFloat32 / kTolBfloat16) of the oracle attend_cache(a1_dense_masked, …) (the layout
// walk, api/layout_walk.h, one element at a time on copies) — contiguous caches and page
// pools with shuffled pages, a page two elements share and −1 table entries past the length;
// cache_seqlens 0, 1, mid and L_cache; L_q 1, 4, 16 and L_q > n_b; g = 1, 4, 8; dense,
// causal, window (left/right, dilation) and chunked; softcap, ALiBi [H_q] and [B, H_q],
// sinks — in every SIMD build this CPU runs; many splits of the key axis (split_keys 1 … 7
// through the kernel's own entry point); plain [B, H_kv, L_k, d] inputs against a1 directly;
// bit-identical outputs for 1 and 2 threads.
//
// Slots past cache_seqlens[b] and pages no element reads hold NaN: a kernel that reads one
// (key n_b, a page past the length) fails the check.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "api/layout_walk.h"
#include "core/bfloat16.h"
#include "core/check.h"
#include "core/error.h"
#include "core/numerics.h"
#include "core/seeded_inputs.h"
#include "optimized/cpu/decode.h"
#include "optimized/cpu/isa.h"
#include "reference/attention.h"
#include "registry/float32_guard.h"
#include "registry/registry.h"
#include "tests/api/cache_inputs.h"
#include "tests/reference/decode_specs.h"

namespace sparseattn {
namespace {

using testing_cache::uniform;

struct Sizes {
  int64_t hq = 8, hkv = 2, lq = 4, d = 16, dv = 16;
};

api::CacheInputs contiguous(const Sizes& z, const std::vector<int64_t>& seqlens, int64_t l_cache,
                            testing_inputs::TestRng& rng) {
  return testing_cache::contiguous_cache(z, seqlens, l_cache, rng);
}
api::CacheInputs paged(const Sizes& z, const std::vector<int64_t>& seqlens, int64_t page_size,
                       int64_t max_pages, testing_inputs::TestRng& rng) {
  return testing_cache::paged_cache(z, seqlens, page_size, max_pages, rng);
}

using testing_spec::chunked;
using testing_spec::dense;
using testing_spec::window;

std::vector<PatternSpec> specs() {
  return {dense(false),         dense(true),         window(3, 2, 1, false), window(5, 0, 2, true),
          window(-1, 4, 3, false), chunked(7, false), chunked(100, true)};
}

// Score parameters: none; softcap + ALiBi [H_q]; ALiBi [B, H_q] + sinks; all three.
std::vector<ScoreMods> mods_grid(int64_t batch, int64_t hq, testing_inputs::TestRng& rng) {
  std::vector<ScoreMods> out(4);
  out[1].softcap = 1.5;
  out[1].alibi_slopes = Tensor<double>({hq});
  for (double& a : out[1].alibi_slopes->data) a = rng.uniform(0.0, 0.2);
  out[2].alibi_slopes = Tensor<double>({batch, hq});
  for (double& a : out[2].alibi_slopes->data) a = rng.uniform(-0.05, 0.2);
  out[2].sinks = Tensor<double>({hq});
  for (double& s : out[2].sinks->data) s = rng.uniform(-1.0, 3.0);
  out[3] = out[2];
  out[3].softcap = 0.7;
  return out;
}

Tolerance tolerance_of(const Kernel& k) {
  const Tolerance want = k.dtype == DType::bfloat16 ? kTolBfloat16 : kTolFloat32;
  EXPECT_EQ(k.atol, want.atol);
  EXPECT_EQ(k.rtol, want.rtol);
  return want;
}

api::CacheInputs rounded_to_bf16(api::CacheInputs in) {
  in.q = round_to_bfloat16(in.q);
  in.k = round_to_bfloat16(in.k);
  in.v = round_to_bfloat16(in.v);
  return in;
}

// kernel through the walk (in place: its entry lists the features) against the oracle
// through the walk, in every SIMD build; bf16 against the oracle on the rounded inputs.
void expect_matches_oracle(const Kernel& kernel, const api::CacheInputs& in) {
  const Tolerance tol = tolerance_of(kernel);
  const bool bf16 = kernel.dtype == DType::bfloat16;
  const Output ref = api::attend_cache(find_kernel("a1_dense_masked"), bf16 ? rounded_to_bf16(in) : in);
  for (const cpu::Isa isa : cpu::supported_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    const cpu::ScopedIsa forced(isa);
    const Output out = api::attend_cache(kernel, in);
    const CheckReport o = check_close(out.o32, ref.o, tol);
    const CheckReport lse = check_close(out.lse32, ref.lse, tol);
    EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
    EXPECT_TRUE(lse.pass) << report_json(lse, "lse", tol);
  }
}

const char* kKernels[] = {"cpu_k09_decode", "cpu_k09_decode_bf16"};

TEST(DecodeKernel, EntriesReadCachesAndPagesInPlace) {
  for (const char* name : kKernels) {
    const Kernel& k = find_kernel(name);
    EXPECT_EQ(k.features, kModern | kKvCache | kPaged) << name;
    EXPECT_EQ(std::string(k.reference), "a1_dense_masked");
  }
}

std::string case_name(const PatternSpec& spec, size_t mods, const Sizes& z) {
  return describe(spec) + " mods#" + std::to_string(mods) + " hq " + std::to_string(z.hq) +
         " hkv " + std::to_string(z.hkv) + " lq " + std::to_string(z.lq);
}

// Contiguous caches: lengths 0, 1, 300 (two splits of 256) and L_cache = 600 (three).
TEST(DecodeKernel, ContiguousCacheMatchesTheOracle) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode contiguous"));
  const std::vector<int64_t> seqlens = {0, 1, 300, 600};
  for (const Sizes z : {Sizes{8, 8, 1, 16, 16}, Sizes{8, 2, 4, 16, 16}, Sizes{8, 1, 16, 16, 16},
                        Sizes{4, 2, 4, 19, 35}}) {
    const std::vector<ScoreMods> mods = mods_grid(4, z.hq, rng);
    for (const PatternSpec& spec : specs())
      for (size_t m = 0; m < mods.size(); ++m) {
        SCOPED_TRACE(case_name(spec, m, z));
        api::CacheInputs in = contiguous(z, seqlens, 600, rng);
        in.spec = spec;
        in.mods = mods[m];
        expect_matches_oracle(find_kernel("cpu_k09_decode"), in);
      }
  }
}

// Page pools: page_size 16 (and 7, not a power of two), shuffled pages, element 1 sharing
// element 0's first page, −1 past each length; lengths 0, 1, a page boundary, the capacity.
TEST(DecodeKernel, PagedCacheMatchesTheOracle) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode paged"));
  for (const int64_t page_size : {16, 7}) {
    const int64_t max_pages = 600 / page_size + 1;
    const int64_t capacity = max_pages * page_size;
    const std::vector<int64_t> seqlens = {300, 2 * page_size + 3, 0, 1, capacity};
    for (const Sizes z : {Sizes{8, 2, 1, 16, 16}, Sizes{8, 8, 4, 16, 16}, Sizes{8, 1, 16, 16, 16}}) {
      const std::vector<ScoreMods> mods = mods_grid(5, z.hq, rng);
      for (const PatternSpec& spec : specs())
        for (size_t m = 0; m < mods.size(); m += 3) {
          SCOPED_TRACE(case_name(spec, m, z) + " page_size " + std::to_string(page_size));
          api::CacheInputs in = paged(z, seqlens, page_size, max_pages, rng);
          in.spec = spec;
          in.mods = mods[m];
          expect_matches_oracle(find_kernel("cpu_k09_decode"), in);
        }
    }
  }
}

// L_q > n_b: queries before the first key (p < 0) have no key under causal and chunked.
TEST(DecodeKernel, MoreQueriesThanKeys) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode lq > n"));
  const Sizes z{8, 2, 16, 16, 16};
  const std::vector<ScoreMods> mods = mods_grid(3, z.hq, rng);
  for (const PatternSpec& spec : specs())
    for (size_t m = 0; m < mods.size(); ++m) {
      SCOPED_TRACE(case_name(spec, m, z));
      api::CacheInputs in = contiguous(z, {5, 1, 15}, 20, rng);
      in.spec = spec;
      in.mods = mods[m];
      expect_matches_oracle(find_kernel("cpu_k09_decode"), in);
    }
}

// The kernel's own entry point with tiny splits: every row's keys spread over many splits
// (and a split boundary inside every page), merged by lse with the sink once.
TEST(DecodeKernel, ManySplitsMergeToTheOracle) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode splits"));
  const Sizes z{8, 2, 4, 16, 16};
  const std::vector<ScoreMods> mods = mods_grid(3, z.hq, rng);
  for (const bool use_pages : {false, true})
    for (const PatternSpec& spec : {dense(false), window(6, 1, 2, false), chunked(9, true)})
      for (size_t m = 0; m < mods.size(); ++m) {
        SCOPED_TRACE(case_name(spec, m, z) + (use_pages ? " paged" : " contiguous"));
        api::CacheInputs in =
            use_pages ? paged(z, {40, 17, 33}, 8, 6, rng)
                      : contiguous(z, {40, 17, 33}, 48, rng);
        in.spec = spec;
        in.mods = mods[m];
        const Output ref = api::attend_cache(find_kernel("a1_dense_masked"), in);
        api::validate_cache_inputs(in);
        const Pattern pattern =
            api::sequence_pattern(in.spec, z.hq, z.lq, in.cache.capacity());
        const Problem p = make_cache_problem(in.q, in.k, in.v, in.cache, pattern, nullptr, in.mods);
        std::vector<float> slopes, sinks;
        cpu::DecodeInputs d;
        d.q = p.q32.ptr();
        d.k = p.k32.ptr();
        d.v = p.v32.ptr();
        d.shape = p.shape;
        d.cache = &*p.cache;
        d.pattern = &pattern;
        d.scale = static_cast<float>(p.scale);
        if (in.mods.softcap) d.mods.softcap = static_cast<float>(*in.mods.softcap);
        if (in.mods.alibi_slopes) {
          for (double a : in.mods.alibi_slopes->data) slopes.push_back(static_cast<float>(a));
          d.mods.slopes = slopes.data();
          d.mods.slopes_batch_stride = in.mods.alibi_slopes->rank() == 2 ? z.hq : 0;
        }
        if (in.mods.sinks) {
          for (double s : in.mods.sinks->data) sinks.push_back(static_cast<float>(s));
          d.mods.sinks = sinks.data();
        }
        for (const int64_t split : {1, 3, 7}) {
          SCOPED_TRACE("split_keys " + std::to_string(split));
          d.split_keys = split;
          Tensor<float> o({3, z.hq, z.lq, z.dv}), lse({3, z.hq, z.lq});
          cpu::k09_decode(d, cpu::Outputs{o.ptr(), lse.ptr()});
          const CheckReport ro = check_close(o, ref.o, kTolFloat32);
          const CheckReport rl = check_close(lse, ref.lse, kTolFloat32);
          EXPECT_TRUE(ro.pass) << report_json(ro, "o", kTolFloat32);
          EXPECT_TRUE(rl.pass) << report_json(rl, "lse", kTolFloat32);
        }
      }
}

// Rows without keys (n_b = 0, or p < 0 under causal): o = 0 and lse = −∞, or σ_h with sinks.
TEST(DecodeKernel, RowsWithoutKeysAreExact) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode empty rows"));
  const Sizes z{4, 2, 4, 16, 16};
  api::CacheInputs in = contiguous(z, {0, 2}, 8, rng);
  in.spec = dense(true);
  for (const bool sinks : {false, true}) {
    if (sinks) in.mods.sinks = Tensor<double>({z.hq}, 0.25);
    const Output out = api::attend_cache(find_kernel("cpu_k09_decode"), in);
    const float want = sinks ? 0.25f : -std::numeric_limits<float>::infinity();
    for (int64_t h = 0; h < z.hq; ++h)
      for (int64_t i = 0; i < z.lq; ++i) {
        // element 0: no key; element 1 (n = 2, L_q = 4): queries 0 and 1 sit at p = −2, −1.
        for (const int64_t b : {int64_t{0}, int64_t{1}}) {
          if (b == 1 && i >= 2) continue;
          const int64_t row = (b * z.hq + h) * z.lq + i;
          EXPECT_EQ(out.lse32.data[row], want) << b << " " << h << " " << i;
          for (int64_t c = 0; c < z.dv; ++c) EXPECT_EQ(out.o32.data[row * z.dv + c], 0.0f);
        }
      }
  }
}

// Without a cache the kernel reads plain [B, H_kv, L_k, d] inputs (every element filled to
// L_k), against a1 directly: L_q < L_k, L_q = L_k (self-attention) and L_q > L_k.
TEST(DecodeKernel, PlainInputsMatchA1) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode plain"));
  for (const auto& [lq, lk] : {std::pair<int64_t, int64_t>{3, 300}, {40, 40}, {20, 6}}) {
    const Sizes z{8, 2, lq, 16, 16};
    const std::vector<ScoreMods> mods = mods_grid(2, z.hq, rng);
    for (const PatternSpec& spec : specs())
      for (size_t m = 0; m < mods.size(); ++m) {
        SCOPED_TRACE(case_name(spec, m, z) + " lk " + std::to_string(lk));
        const Tensor<double> q = uniform({2, z.hq, lq, z.d}, rng);
        const Tensor<double> k = uniform({2, z.hkv, lk, z.d}, rng);
        const Tensor<double> v = uniform({2, z.hkv, lk, z.dv}, rng);
        const Pattern pattern = materialize(spec, {2, z.hq, lq, lk});
        const AttentionResult ref = a1_dense_masked(q, k, v, pattern, nullptr, mods[m]);
        const AttentionResult ref16 = a1_dense_masked(
            round_to_bfloat16(q), round_to_bfloat16(k), round_to_bfloat16(v), pattern, nullptr, mods[m]);
        const Problem problem = make_problem(q, k, v, pattern, nullptr, mods[m]);
        for (const char* name : kKernels) {
          const Kernel& kernel = find_kernel(name);
          SCOPED_TRACE(name);
          ASSERT_TRUE(kernel.serves(pattern));
          const Tolerance tol = tolerance_of(kernel);
          Output out;
          kernel.run(problem, out);
          const AttentionResult& r = kernel.dtype == DType::bfloat16 ? ref16 : ref;
          const CheckReport o = check_close(out.o32, r.o, tol);
          const CheckReport l = check_close(out.lse32, r.lse, tol);
          EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
          EXPECT_TRUE(l.pass) << report_json(l, "lse", tol);
        }
      }
  }
}

// The bf16 twin against the oracle on the bf16-rounded inputs, contiguous and paged.
TEST(DecodeKernel, Bf16TwinMatchesTheOracleOnRoundedInputs) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode bf16"));
  const Sizes z{8, 2, 4, 16, 16};
  const std::vector<ScoreMods> mods = mods_grid(4, z.hq, rng);
  for (const PatternSpec& spec : specs())
    for (size_t m = 0; m < mods.size(); m += 3) {
      SCOPED_TRACE(case_name(spec, m, z));
      api::CacheInputs in = contiguous(z, {0, 1, 300, 600}, 600, rng);
      in.spec = spec;
      in.mods = mods[m];
      expect_matches_oracle(find_kernel("cpu_k09_decode_bf16"), in);
      api::CacheInputs pg = paged(z, {300, 35, 0, 1}, 16, 20, rng);
      pg.spec = spec;
      pg.mods = mods[m];
      expect_matches_oracle(find_kernel("cpu_k09_decode_bf16"), pg);
    }
}

// Head dims of real models and awkward ones, where the kernel's vector paths run (the grids
// above use d <= 35): d 128 (whole pairs of vectors, the bf16 rows read as even and odd
// elements, P·V four vectors per head at a time), d 53 / d_v 115 (a pair, one vector and a
// scalar tail of the scores; P·V's four-vector, pair, one-vector and scalar steps in the
// avx512 build), d 64 / d_v 96 with g 8 (two groups of four heads); g 4, 3 (a group of two
// and one of one) and 8; L_q 1 and 2; float32 and bf16; contiguous and paged (page_size 64).
TEST(DecodeKernel, WideHeadsMatchTheOracle) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode wide heads"));
  for (const Sizes z : {Sizes{8, 2, 1, 128, 128}, Sizes{6, 2, 2, 53, 115}, Sizes{16, 2, 1, 64, 96}}) {
    const std::vector<ScoreMods> mods = mods_grid(4, z.hq, rng);
    for (const PatternSpec& spec : {dense(true), window(100, 0, 1, false), chunked(150, true)})
      for (const size_t m : {size_t{0}, size_t{3}})
        for (const char* name : kKernels) {
          SCOPED_TRACE(case_name(spec, m, z) + " d " + std::to_string(z.d) + " dv " +
                       std::to_string(z.dv) + " " + name);
          api::CacheInputs in = contiguous(z, {0, 1, 300, 700}, 700, rng);
          in.spec = spec;
          in.mods = mods[m];
          expect_matches_oracle(find_kernel(name), in);
          api::CacheInputs pg = paged(z, {300, 70, 0, 700}, 64, 11, rng);
          pg.spec = spec;
          pg.mods = mods[m];
          expect_matches_oracle(find_kernel(name), pg);
        }
  }
}

// The same keys in a contiguous cache and in shuffled pages whose size is a multiple of the
// kernel's 64-key block: the same blocks, the same splits, so the same bits (the property
// bench_decode checks before it times the two layouts), in every SIMD build.
TEST(DecodeKernel, ContiguousAndPagedCachesAgreeBitForBit) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode layouts agree"));
  const Sizes z{8, 2, 1, 128, 128};
  for (const int64_t page_size : {64, 256}) {
    const int64_t max_pages = 1100 / page_size + 1, n = 1100;
    api::CacheInputs pg = paged(z, {n}, page_size, max_pages, rng);
    pg.spec = dense(true);
    // The contiguous twin: element 0's keys gathered out of its pages in order.
    api::CacheInputs ct = contiguous(z, {n}, max_pages * page_size, rng);
    ct.q = pg.q;
    ct.spec = pg.spec;
    for (int64_t h = 0; h < z.hkv; ++h)
      for (int64_t t = 0; t < n; ++t) {
        const int64_t page = pg.cache.block_table[t / page_size];
        const int64_t from = (page * z.hkv + h) * page_size + t % page_size;
        const int64_t to = h * max_pages * page_size + t;
        std::copy_n(pg.k.ptr() + from * z.d, z.d, ct.k.ptr() + to * z.d);
        std::copy_n(pg.v.ptr() + from * z.dv, z.dv, ct.v.ptr() + to * z.dv);
      }
    for (const char* name : kKernels) {
      const Kernel& kernel = find_kernel(name);
      const Tolerance tol = tolerance_of(kernel);
      const bool bf16 = kernel.dtype == DType::bfloat16;
      const Output ref = api::attend_cache(find_kernel("a1_dense_masked"), bf16 ? rounded_to_bf16(ct) : ct);
      for (const cpu::Isa isa : cpu::supported_isas()) {
        SCOPED_TRACE(std::string(name) + " " + cpu::isa_name(isa) + " page_size " +
                     std::to_string(page_size));
        const cpu::ScopedIsa forced(isa);
        const Output a = api::attend_cache(kernel, ct);
        const Output b = api::attend_cache(kernel, pg);
        EXPECT_EQ(a.o32.data, b.o32.data);
        EXPECT_EQ(a.lse32.data, b.lse32.data);
        const CheckReport o = check_close(a.o32, ref.o, tol);  // and both right, not only equal
        EXPECT_TRUE(o.pass) << report_json(o, "o", tol);
      }
    }
  }
}

// contract §4.6: the split-K merge runs in a fixed order, so 1 and 2 threads agree bit for bit.
TEST(DecodeKernel, BitIdenticalForOneAndTwoThreads) {
  testing_inputs::TestRng rng(testing_inputs::seed_of("decode threads"));
  const Sizes z{8, 2, 4, 16, 16};
  api::CacheInputs in = paged(z, {600, 37, 250}, 16, 40, rng);
  in.spec = window(100, 3, 1, false);
  in.mods = mods_grid(3, z.hq, rng)[3];
  for (const char* name : kKernels) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    const Output one = api::attend_cache(find_kernel(name), in);
    omp_set_num_threads(2);
    const Output two = api::attend_cache(find_kernel(name), in);
    omp_set_num_threads(before);
    EXPECT_EQ(one.o32.data, two.o32.data) << name;
    EXPECT_EQ(one.lse32.data, two.lse32.data) << name;
  }
}

// What it does not serve it says (contract §4.7): longformer, key padding, per-head mixtures.
TEST(DecodeKernel, ServesDenseWindowAndChunkedOnly) {
  for (const PatternSpec& spec : specs())
    EXPECT_TRUE(cpu::k09_serves(materialize(spec, {1, 2, 4, 64}))) << describe(spec);
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = 2;
  const Pattern longformer = materialize(lf, {1, 2, 64, 64});
  EXPECT_FALSE(cpu::k09_serves(longformer));
  testing_inputs::TestRng rng(1);
  const Problem problem = make_problem(uniform({1, 2, 64, 8}, rng), uniform({1, 2, 64, 8}, rng),
                                       uniform({1, 2, 64, 8}, rng), longformer, nullptr);
  for (const char* name : kKernels) {
    Output out;
    try {
      find_kernel(name).run(problem, out);
      ADD_FAILURE() << name << ": no exception";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "pattern");
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  PatternSpec padded = dense(false);
  padded.key_padding_mask = Tensor<uint8_t>({1, 64}, 1);
  EXPECT_FALSE(cpu::k09_serves(materialize(padded, {1, 2, 4, 64})));
}

}  // namespace
}  // namespace sparseattn
