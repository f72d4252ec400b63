// Checks contract §3.12 (HF-compatible BigBird): HF's listing block by block, the float64
// definition hf_listing_oracle against a restatement written here (weights counted with
// multiplicity, long double) and against the set-semantics oracle where nothing repeats,
// and the float32 kernel k07 against hf_listing_oracle at kTolFloat32, bit-identical for
// any thread count, and as the registry entry cpu_k07_hf_listing (served where nothing
// repeats, HF's definition on repeats). The stored HF fixtures themselves are checked in
// tests/cli/cli_peers_test.cpp.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/error.h"
#include "core/numerics.h"
#include "optimized/cpu/compat_kernels.h"
#include "reference/attention.h"
#include "reference/compat.h"
#include "pattern/pattern.h"
#include "registry/registry.h"

namespace sparseattn {
namespace {

// Small deterministic values (a fixed LCG; no standard-library distribution).
Tensor<double> filled(Shape shape, uint64_t seed) {
  Tensor<double> t(std::move(shape), 0.0);
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& e : t.data) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = static_cast<double>((x >> 33) % 2001) / 1000.0 - 1.0;
  }
  return t;
}

Tensor<int64_t> table(Shape shape, std::vector<int64_t> values) {
  Tensor<int64_t> t(std::move(shape), 0);
  t.data = std::move(values);
  return t;
}

TEST(HfBigBirdListing, SixBlocksInHfOrder) {
  // nb = 6, r = 2; rows are query blocks 1..4.
  const BlockListing l = hf_bigbird_listing(12, 2, 1, table({1, 4, 2}, {3, 4, 5, 0, 0, 1, 2, 2}));
  ASSERT_EQ(l.num_blocks, 6);
  const std::vector<std::vector<int64_t>> want = {
      {0, 1, 2, 3, 4, 5},     // global query block
      {0, 1, 2, 5, 3, 4},     // second: 0, 1, 2, last, R[0]
      {0, 1, 2, 3, 5, 0, 5},  // middle: 0, band, R[1], last
      {0, 2, 3, 4, 0, 1, 5},  // middle
      {0, 3, 4, 5, 2, 2},     // second last: 0, nb-3, nb-2, nb-1, R[3]
      {0, 1, 2, 3, 4, 5}};    // global query block
  EXPECT_EQ(l.lists[0], want);
}

TEST(HfBigBirdListing, RefusesWhatHfRefuses) {
  EXPECT_THROW(hf_bigbird_listing(13, 2, 1, table({1, 4, 1}, {0, 0, 0, 0})), InvalidArgument);
  EXPECT_THROW(hf_bigbird_listing(8, 2, 1, table({1, 2, 1}, {0, 0})), InvalidArgument);  // nb 4
  EXPECT_THROW(hf_bigbird_listing(12, 2, 1, table({1, 4, 1}, {0, 6, 0, 0})), InvalidArgument);
  EXPECT_THROW(hf_bigbird_listing(12, 2, 3, table({2, 4, 1}, std::vector<int64_t>(8, 1))),
               InvalidArgument);
}

// The definition restated: a key counts once per listing of its block.
TEST(HfListingOracle, CountsRepeatsAsListed) {
  const int64_t b = 2, nb = 5, n = nb * b, d = 3, dv = 2;
  const Tensor<int64_t> t = table({1, 3, 2}, {0, 0, 4, 4, 1, 1});  // every draw a repeat
  const BlockListing l = hf_bigbird_listing(n, b, 1, t);
  const Tensor<double> q = filled({1, 1, n, d}, 1), k = filled({1, 1, n, d}, 2),
                       v = filled({1, 1, n, dv}, 3);
  Tensor<uint8_t> pad({1, n}, 1);
  pad.data[3] = 0;  // one padded token: its row is empty, it leaves every list
  const AttentionResult r = hf_listing_oracle(q, k, v, l, &pad, nullptr);
  const long double scale = 1.0L / std::sqrt(3.0L);
  for (int64_t i = 0; i < n; ++i) {
    if (i == 3) {
      EXPECT_EQ(r.lse.data[3], -std::numeric_limits<double>::infinity());
      for (int64_t x = 0; x < dv; ++x) EXPECT_EQ(r.o.data[3 * dv + x], 0.0);
      continue;
    }
    std::vector<long double> count(n, 0.0L);
    for (int64_t c : l.lists[0][i / b])
      for (int64_t j = c * b; j < (c + 1) * b; ++j) count[j] += (j == 3) ? 0.0L : 1.0L;
    long double z = 0.0L, o[2] = {0.0L, 0.0L};
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0.0L;
      for (int64_t x = 0; x < d; ++x) s += static_cast<long double>(q.data[i * d + x]) * k.data[j * d + x];
      const long double w = count[j] * std::exp(scale * s);
      z += w;
      for (int64_t x = 0; x < dv; ++x) o[x] += w * v.data[j * dv + x];
    }
    EXPECT_NEAR(r.lse.data[i], static_cast<double>(std::log(z)), 1e-13) << i;
    for (int64_t x = 0; x < dv; ++x) EXPECT_NEAR(r.o.data[i * dv + x], static_cast<double>(o[x] / z), 1e-13);
  }
}

// Where HF lists no block twice, its listing is the ITC pattern of contract §3.6 with the
// same table, and the definition must equal the set-semantics oracle.
TEST(HfListingOracle, EqualsTheOracleWithoutRepeats) {
  const int64_t b = 3, nb = 8, n = nb * b, H = 2;
  // Rows are query blocks 1..6; each draw avoids 0, nb-1 and the row's neighbours.
  const Tensor<int64_t> t = table({H, nb - 2, 1}, {4, 5, 6, 1, 2, 3, 6, 4, 5, 6, 2, 3});
  const BlockListing l = hf_bigbird_listing(n, b, H, t);
  PatternSpec spec;
  spec.kind = PatternKind::bigbird;
  spec.block_size = b;
  spec.random_table = t;
  Tensor<uint8_t> pad({2, n}, 1);
  for (int64_t j = n - 4; j < n; ++j) pad.data[n + j] = 0;
  spec.key_padding_mask = pad;
  const Pattern p = materialize(spec, PatternSizes{2, H, n, n});
  const Tensor<double> q = filled({2, H, n, 4}, 4), k = filled({2, H, n, 4}, 5),
                       v = filled({2, H, n, 5}, 6);
  const double scale = 0.7;
  const AttentionResult got = hf_listing_oracle(q, k, v, l, &pad, &scale);
  const AttentionResult want = a1_dense_masked(q, k, v, p, &scale);
  EXPECT_TRUE(check_close(got.o, want.o, kTolFloat64).pass);
  EXPECT_TRUE(check_close(got.lse, want.lse, kTolFloat64).pass);
}

// k07 against the float64 definition: eval-mode table (all 0, the heaviest repeats),
// head_dim_v != head_dim, padding, 1 and 2 threads bit-identical.
TEST(K07HfListing, MatchesTheDefinitionAtFloat32Tolerance) {
  const int64_t b = 4, nb = 7, n = nb * b, H = 3, B = 2, d = 5, dv = 3;
  for (const bool eval : {true, false}) {
    SCOPED_TRACE(eval ? "eval table" : "drawn table");
    Tensor<int64_t> t({H, nb - 2, 2}, 0);
    if (!eval)
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<int64_t>((i * 5 + 1) % nb);
    const BlockListing l = hf_bigbird_listing(n, b, H, t);
    const Tensor<double> q = filled({B, H, n, d}, 7), k = filled({B, H, n, d}, 8),
                         v = filled({B, H, n, dv}, 9);
    Tensor<uint8_t> pad({B, n}, 1);
    for (int64_t j = n - 6; j < n; ++j) pad.data[n + j] = 0;
    const AttentionResult ref = hf_listing_oracle(q, k, v, l, &pad, nullptr);
    const Tensor<float> qf = tensor_cast<float>(q), kf = tensor_cast<float>(k), vf = tensor_cast<float>(v);
    const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
    const float scale = static_cast<float>(1.0 / std::sqrt(5.0));
    Tensor<float> o1({B, H, n, dv}, 0.0f), l1({B, H, n}, 0.0f), o2 = o1, l2 = l1;
    omp_set_num_threads(1);
    cpu::k07_hf_listing(qf.ptr(), kf.ptr(), vf.ptr(), s, l, pad.ptr(), scale, o1.ptr(), l1.ptr());
    omp_set_num_threads(2);
    cpu::k07_hf_listing(qf.ptr(), kf.ptr(), vf.ptr(), s, l, pad.ptr(), scale, o2.ptr(), l2.ptr());
    const CheckReport ro = check_close(o1, ref.o, kTolFloat32), rl = check_close(l1, ref.lse, kTolFloat32);
    EXPECT_TRUE(ro.pass) << ro.reason;
    EXPECT_TRUE(rl.pass) << rl.reason;
    EXPECT_EQ(o1.data, o2.data);
    EXPECT_EQ(l1.data, l2.data);
  }
}

// k07 is the registry entry cpu_k07_hf_listing: it serves the bigbird patterns whose HF
// listing repeats no block — there it is the contract's set semantics and matches
// a1_dense_masked — refuses by name what HF cannot list, and, run on a table with repeats
// (what --compat hf-bigbird does), computes HF's definition.
TEST(K07Registry, ServesListingsWithoutRepeatsAndComputesHfOnRepeats) {
  const Kernel& k07 = find_kernel("cpu_k07_hf_listing");
  EXPECT_EQ(k07.target, Target::cpu);
  EXPECT_EQ(k07.dtype, DType::float32);
  EXPECT_STREQ(k07.reference, "a1_dense_masked");
  const int64_t b = 4, nb = 7, n = nb * b, H = 2, B = 2, d = 5, dv = 3;
  const Tensor<double> q = filled({B, H, n, d}, 1), k = filled({B, H, n, d}, 2),
                       v = filled({B, H, n, dv}, 3);
  Tensor<uint8_t> pad({B, n}, 1);
  for (int64_t j = n - 5; j < n; ++j) pad.data[n + j] = 0;
  PatternSpec seeded;
  seeded.kind = PatternKind::bigbird;
  seeded.block_size = b;
  seeded.num_random_blocks = 2;
  seeded.seed = 5;
  seeded.key_padding_mask = pad;
  const Pattern p = materialize(seeded, {B, H, n, n});
  ASSERT_TRUE(k07.serves(p));
  {
    const Problem problem = make_problem(q, k, v, p, nullptr);
    Output out;
    k07.run(problem, out);
    const AttentionResult ref = a1_dense_masked(q, k, v, p, nullptr);
    EXPECT_TRUE(check_close(out.o32, ref.o, kTolFloat32).pass);
    EXPECT_TRUE(check_close(out.lse32, ref.lse, kTolFloat32).pass);
  }
  // The eval-mode table (every random block 0, listed again): not served; run anyway, the
  // entry is HF's definition, repeats counted.
  PatternSpec eval = seeded;
  eval.num_random_blocks = 0;
  eval.random_table = Tensor<int64_t>({1, nb - 2, 2}, 0);
  const Pattern pe = materialize(eval, {B, H, n, n});
  EXPECT_FALSE(k07.serves(pe));
  {
    const Problem problem = make_problem(q, k, v, pe, nullptr);
    Output out;
    k07.run(problem, out);
    const AttentionResult hf =
        hf_listing_oracle(q, k, v, hf_bigbird_listing(n, b, H, *eval.random_table), &pad, nullptr);
    EXPECT_TRUE(check_close(out.o32, hf.o, kTolFloat32).pass);
    EXPECT_TRUE(check_close(out.lse32, hf.lse, kTolFloat32).pass);
    const AttentionResult sets = a1_dense_masked(q, k, v, pe, nullptr);
    EXPECT_FALSE(check_close(out.o32, sets.o, kTolFloat32).pass) << "the repeats must count";
  }
  // What HF cannot list: 30 tokens (not a whole number of blocks), 4 blocks.
  for (const int64_t len : {30, 16}) {
    PatternSpec s = seeded;
    s.key_padding_mask.reset();
    s.num_random_blocks = 0;
    const Pattern bad = materialize(s, {1, 1, len, len});
    EXPECT_FALSE(k07.serves(bad)) << len;
    const Problem problem = make_problem(filled({1, 1, len, d}, 4), filled({1, 1, len, d}, 5),
                                         filled({1, 1, len, dv}, 6), bad, nullptr);
    Output out;
    try {
      k07.run(problem, out);
      ADD_FAILURE() << "no exception at " << len;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "pattern");
      EXPECT_NE(std::string(e.what()).find("cpu_k07_hf_listing"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sparseattn
