// Property test of contract §3 "Parameters beyond the sequence": random pattern specs
// whose parameters range over the whole int64 range (0, 1, values near seq_len, powers
// of two, values near 2^63), on random small shapes. For every spec:
//   - materialize() succeeds, in memory bounded by the sizes (draw table, tiles), and its
//     Pattern::spec is canonical (canonicalize() is idempotent on it);
//   - the dense mask of every head equals the independent predicate allowed_spec() of the
//     spec AS GIVEN (tests/reference/allowed_spec.h, which shares no code with the
//     builder): clamping never changes the allowed set;
//   - every exact implementation in the registry that serves the pattern matches the
//     float64 oracle a1_dense_masked within its declared tolerance.
// The generator is seeded (TestRng), so a failure prints a reproducible case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/error.h"
#include "reference/attention.h"
#include "registry/registry.h"
#include "tests/reference/allowed_spec.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_inputs::TestRng;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A parameter >= lo drawn from the whole range: small, near the sequence length n, a power
// of two, near 2^63, or uniform over [lo, 2^63).
int64_t wild(TestRng& rng, int64_t lo, int64_t n) {
  switch (rng.below(6)) {
    case 0: return lo + rng.below(4);
    case 1: return std::max(lo, n - 2 + rng.below(5));
    case 2: return std::max(lo, int64_t{1} << rng.below(63));
    case 3: return kInt64Max - rng.below(4);
    case 4: return lo + static_cast<int64_t>(rng.next() >> 1) % (kInt64Max - lo);
    default: return std::max(lo, 2 * n + rng.below(3 * n + 1));
  }
}

struct PropertyCase {
  PatternSpec spec;
  PatternSizes sizes;
  int64_t head_dim = 1, head_dim_v = 1;
  std::string text;  // the whole case, printed on failure
};

PropertyCase draw_case(uint64_t seed) {
  TestRng rng(seed);
  PropertyCase c;
  static const PatternKind kinds[] = {PatternKind::dense,      PatternKind::window,
                                      PatternKind::longformer, PatternKind::random,
                                      PatternKind::bigbird,    PatternKind::bigbird_etc};
  PatternSpec& s = c.spec;
  s.kind = kinds[rng.below(6)];
  const bool block = s.kind == PatternKind::bigbird || s.kind == PatternKind::bigbird_etc;
  c.sizes.batch = 1;
  c.sizes.num_heads = 1 + rng.below(2);
  c.sizes.seq_len_q = 1 + rng.below(13);
  c.sizes.seq_len_k = block ? c.sizes.seq_len_q : 1 + rng.below(13);
  c.head_dim = 1 + rng.below(4);
  c.head_dim_v = 1 + rng.below(3);
  const int64_t n = std::max(c.sizes.seq_len_q, c.sizes.seq_len_k);
  s.causal = s.kind != PatternKind::bigbird && s.kind != PatternKind::bigbird_etc && rng.below(2);
  if (s.kind == PatternKind::window || s.kind == PatternKind::longformer ||
      s.kind == PatternKind::random) {
    s.window = wild(rng, 0, n);
    s.dilation = wild(rng, 1, n);
  }
  if (s.kind == PatternKind::longformer || s.kind == PatternKind::random)
    for (int64_t g = 0; g < c.sizes.seq_len_k; ++g)
      if (rng.below(5) == 0) s.global.push_back(g);
  if (s.kind == PatternKind::random) s.num_random = wild(rng, 0, n);
  if (block) {
    s.block_size = wild(rng, 1, n);
    s.num_random_blocks = wild(rng, 0, n);
    if (s.kind == PatternKind::bigbird_etc) s.num_global_tokens = rng.below(c.sizes.seq_len_q + 1);
  }
  s.tile = rng.below(3) == 0 ? wild(rng, 1, n) : 1 + rng.below(8);
  // Only the kinds that draw read a seed (validate_spec refuses one elsewhere); the draw
  // is made either way, so every case's stream stays what it was.
  const uint64_t draw_seed = rng.next();
  if (s.kind == PatternKind::random || block) s.seed = draw_seed;
  std::ostringstream t;
  t << "seed " << seed << ": " << describe(s) << " tile=" << s.tile << " heads=" << c.sizes.num_heads
    << " seq_len_q=" << c.sizes.seq_len_q << " seq_len_k=" << c.sizes.seq_len_k
    << " head_dim=" << c.head_dim << " head_dim_v=" << c.head_dim_v;
  c.text = t.str();
  return c;
}

bool same_parameters(const PatternSpec& a, const PatternSpec& b) {
  return a.window == b.window && a.dilation == b.dilation && a.block_size == b.block_size &&
         a.num_random == b.num_random && a.num_random_blocks == b.num_random_blocks &&
         a.tile == b.tile;
}

constexpr int kCases = 400;

TEST(ParametersBeyondTheSequence, MaskEqualsThePredicateOfTheSpecAsGivenAndMemoryIsBounded) {
  for (int c_index = 0; c_index < kCases; ++c_index) {
    const PropertyCase c = draw_case(1000 + c_index);
    SCOPED_TRACE(c.text);
    const Pattern p = materialize(c.spec, c.sizes);
    const PatternSizes& z = c.sizes;
    const int64_t n = std::max(z.seq_len_q, z.seq_len_k);
    // Canonical: within the sequence, and a fixed point of canonicalize().
    EXPECT_TRUE(same_parameters(canonicalize(p.spec, z), p.spec));
    EXPECT_LE(p.spec.dilation, n);
    EXPECT_LE(p.spec.window, n);
    EXPECT_LE(p.spec.num_random, z.seq_len_k);
    if (c.spec.kind == PatternKind::bigbird || c.spec.kind == PatternKind::bigbird_etc) {
      EXPECT_LE(p.spec.block_size, n);
      EXPECT_LE(p.spec.num_random_blocks, n);
    }
    // Memory bounded by the sizes: the draw table has at most heads * seq_len_q * seq_len_k
    // entries, and every head's tiles are at most max(n, 64) tokens a side.
    EXPECT_LE(p.random_draws.numel(), z.num_heads * z.seq_len_q * z.seq_len_k);
    for (int64_t h = 0; h < z.num_heads; ++h) {
      EXPECT_LE(p.head(h).tile, std::max<int64_t>(n, 64));
      const Tensor<uint8_t> m = dense_mask(p.head(h));
      for (int64_t i = 0; i < z.seq_len_q; ++i)
        for (int64_t j = 0; j < z.seq_len_k; ++j)
          ASSERT_EQ(m.data[i * z.seq_len_k + j] != 0,
                    testing_spec::allowed_spec(c.spec, z, p.random_draws, h, i, j))
              << "head " << h << " query " << i << " key " << j;
    }
  }
}

TEST(ParametersBeyondTheSequence, EveryServingExactImplementationMatchesTheOracle) {
  int runs = 0;
  for (int c_index = 0; c_index < kCases; ++c_index) {
    const PropertyCase c = draw_case(1000 + c_index);
    SCOPED_TRACE(c.text);
    const Pattern p = materialize(c.spec, c.sizes);
    const PatternSizes& z = c.sizes;
    const uint64_t seed = 77 + c_index;
    const Tensor<double> q =
        testing_inputs::random_tensor({1, z.num_heads, z.seq_len_q, c.head_dim}, seed);
    const Tensor<double> k =
        testing_inputs::random_tensor({1, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1);
    const Tensor<double> v =
        testing_inputs::random_tensor({1, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2);
    const AttentionResult oracle = a1_dense_masked(q, k, v, p, nullptr);
    // bf16 kernels are held to the oracle on their bf16-rounded inputs (docs/numerics.md).
    const AttentionResult oracle_bf16 = a1_dense_masked(
        round_to_bfloat16(q), round_to_bfloat16(k), round_to_bfloat16(v), p, nullptr);
    const Problem problem = make_problem(q, k, v, p, nullptr);
    for (const Kernel& kernel : kernels()) {
      if (!kernel.exact || !kernel.serves(p)) continue;
      SCOPED_TRACE(kernel.name);
      Output out;
      try {
        kernel.run(problem, out);
      } catch (const RuntimeError& e) {
        // A CUDA build on a machine without a device: those kernels are tested on one.
        if (kernel.target == Target::cuda) continue;
        throw;
      }
      ++runs;
      const Tolerance tol{kernel.atol, kernel.rtol};
      const bool f64 = out.o.numel() > 0;
      const AttentionResult& ref = kernel.dtype == DType::bfloat16 ? oracle_bf16 : oracle;
      const CheckReport o = f64 ? check_close(out.o, ref.o, tol) : check_close(out.o32, ref.o, tol);
      const CheckReport lse =
          f64 ? check_close(out.lse, ref.lse, tol) : check_close(out.lse32, ref.lse, tol);
      ASSERT_TRUE(o.pass) << report_json(o, "o", tol);
      ASSERT_TRUE(lse.pass) << report_json(lse, "lse", tol);
    }
  }
  EXPECT_GT(runs, kCases * 3);  // several implementations per case, not a vacuous loop
}

// contract §3 bottom-right alignment, an exact value: window 1, dilation 2, one query over
// two keys. The query sits at key position 1 and may attend key 1 only (t = ±1 land on -1
// and 3), so o = v[1] and lse = scale·<q, k_1>, in every implementation that serves it
// (a top-left kernel would return v[0]).
TEST(DilatedWindowAlignment, OneQueryTwoKeysAttendsOnlyTheLastKey) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = 1;
  s.dilation = 2;
  const Pattern p = materialize(s, PatternSizes{1, 1, 1, 2});
  const Tensor<double> q({1, 1, 1, 2}, 0.0), k({1, 1, 2, 2}, 0.0), v({1, 1, 2, 3}, 0.0);
  Tensor<double> qq = q, kk = k, vv = v;
  qq.data = {1.0, 2.0};
  kk.data = {0.5, -1.0, 2.0, 0.25};             // <q, k_1> = 2.5
  vv.data = {10.0, 20.0, 30.0, -1.0, -2.0, -3.0};  // v[1] = (-1, -2, -3)
  const double scale = 1.0;
  const Problem problem = make_problem(qq, kk, vv, p, &scale);
  int served = 0;
  for (const Kernel& kernel : kernels()) {
    if (!kernel.exact || !kernel.serves(p)) continue;
    SCOPED_TRACE(kernel.name);
    Output out;
    try {
      kernel.run(problem, out);
    } catch (const RuntimeError&) {
      if (kernel.target == Target::cuda) continue;  // no device here
      throw;
    }
    ++served;
    const bool f64 = out.o.numel() > 0;
    for (int64_t x = 0; x < 3; ++x)
      EXPECT_NEAR(f64 ? out.o.data[x] : out.o32.data[x], -(x + 1.0), 1e-6) << "o[" << x << "]";
    EXPECT_NEAR(f64 ? out.lse.data[0] : out.lse32.data[0], 2.5, 1e-6);
  }
  EXPECT_GE(served, 6);  // a1, a2, a3, a5, cpu_k03, cpu_k06 at least
}

}  // namespace
}  // namespace sparseattn
