// Checks contract §2.10–§2.12 (packed variable-length batches, a KV cache filled to
// cache_seqlens, paged KV) and §7.8 (their gradients) through api/layout_walk.h:
//   - hand-computed 4-token cases (values chosen so every softmax is a ratio of small
//     integers), including an empty sequence, a sequence without keys (with and without a
//     sink) and a causal sequence with L_q < L_k aligned bottom-right per sequence;
//   - the walk against an independent construction: the packed batch as one problem with an
//     explicit block-diagonal mask, and a cache as the problem on its filled prefix (built
//     here by loops, not by core/seq_layout's reads); pages shuffled and shared;
//   - every CPU kernel serving the grid's patterns through the walk, at its entry's tolerance;
//   - the gradients of a packed batch against central finite differences of the oracle;
//   - each bad input named, as contract §5.1 asks.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "api/layout_walk.h"
#include "core/bfloat16.h"
#include "core/check.h"
#include "core/field.h"
#include "core/numerics.h"
#include "core/seeded_inputs.h"
#include "reference/attention.h"
#include "registry/backward.h"
#include "registry/registry.h"

namespace sparseattn::api {
namespace {

using testing_inputs::random_tensor;

const Kernel& oracle() { return find_kernel("a1_dense_masked"); }

Tensor<double> tensor(Shape shape, std::vector<double> values) {
  Tensor<double> t(std::move(shape));
  t.data = std::move(values);
  return t;
}

PatternSpec dense(bool causal = false) {
  PatternSpec s;
  s.causal = causal;
  return s;
}

PatternSpec window(int64_t w, bool causal = false) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = w;
  s.causal = causal;
  return s;
}

// --- hand-computed values ----------------------------------------------------------------

// Three sequences, one head, head_dim 1, scale 1, causal:
//   0: one query (q = 0) against 2 keys: p = 0 + 2 − 1 = 1 sees both; equal weights:
//      o = (1 + 3) / 2 = 2, lse = ln 2.
//   1: empty (no queries, no keys).
//   2: two queries against keys (0, 1) with values (4, 8): query 0 (p = 0) sees key 0 only:
//      o = 4, lse = q·k = 5·0 = 0; query 1 (q = ln 3, p = 1) sees both, scores (0, ln 3):
//      weights (1/4, 3/4), o = (4 + 24) / 4 = 7, lse = ln 4.
VarlenInputs hand_varlen() {
  VarlenInputs in;
  in.q = tensor({3, 1, 1}, {0.0, 5.0, std::log(3.0)});
  in.k = tensor({4, 1, 1}, {7.0, 7.0, 0.0, 1.0});
  in.v = tensor({4, 1, 1}, {1.0, 3.0, 4.0, 8.0});
  in.varlen.cu_seqlens_q = {0, 1, 1, 3};
  in.varlen.cu_seqlens_k = {0, 2, 2, 4};
  in.spec = dense(true);
  static const double one = 1.0;
  in.scale = &one;
  return in;
}

TEST(Varlen, HandComputedCausalSequencesAreIndependent) {
  const Output out = attend_varlen(oracle(), hand_varlen());
  ASSERT_EQ(out.o.shape, Shape({3, 1, 1}));
  ASSERT_EQ(out.lse.shape, Shape({1, 3}));
  EXPECT_NEAR(out.o.data[0], 2.0, 1e-15);
  EXPECT_NEAR(out.o.data[1], 4.0, 1e-15);
  EXPECT_NEAR(out.o.data[2], 7.0, 1e-14);
  EXPECT_NEAR(out.lse.data[0], std::log(2.0), 1e-15);
  EXPECT_NEAR(out.lse.data[1], 0.0, 1e-15);
  EXPECT_NEAR(out.lse.data[2], std::log(4.0), 1e-15);
}

// Sequence 1 with a query and no key: a fully masked row (o = 0, lse = −∞; with a sink
// σ = 0.5 its lse is σ, contract §2.9).
TEST(Varlen, SequenceWithoutKeysHasFullyMaskedRows) {
  VarlenInputs in = hand_varlen();
  in.q = tensor({4, 1, 1}, {0.0, 2.0, 5.0, std::log(3.0)});
  in.varlen.cu_seqlens_q = {0, 1, 2, 4};
  Output out = attend_varlen(oracle(), in);
  EXPECT_EQ(out.o.data[1], 0.0);
  EXPECT_EQ(out.lse.data[1], -INFINITY);
  EXPECT_NEAR(out.o.data[3], 7.0, 1e-14);
  in.mods.sinks = tensor({1}, {0.5});
  out = attend_varlen(oracle(), in);
  EXPECT_EQ(out.o.data[1], 0.0);
  EXPECT_EQ(out.lse.data[1], 0.5);
  // Sequence 0 with the sink: lse = ln(e^0.5 + 2), o = (1 + 3) / (e^0.5 + 2).
  EXPECT_NEAR(out.lse.data[0], std::log(std::exp(0.5) + 2.0), 1e-15);
  EXPECT_NEAR(out.o.data[0], 4.0 / (std::exp(0.5) + 2.0), 1e-15);
}

// A window restarts with each sequence: window 0 (the key at the query's own position)
// gives o_i = v at p in every sequence, with p counted from the sequence's first key.
TEST(Varlen, WindowPositionsRestartPerSequence) {
  VarlenInputs in;
  in.q = tensor({4, 1, 1}, {1, 1, 1, 1});
  in.k = tensor({5, 1, 1}, {1, 1, 1, 1, 1});
  in.v = tensor({5, 1, 1}, {10, 11, 20, 21, 22});
  in.varlen.cu_seqlens_q = {0, 2, 4};  // sequence 0: 2 queries, 2 keys; 1: 2 queries, 3 keys
  in.varlen.cu_seqlens_k = {0, 2, 5};
  in.spec = window(0);
  const Output out = attend_varlen(oracle(), in);
  // Sequence 1: L_q = 2 < L_k = 3, so query i sits at p = i + 1: keys 21 and 22.
  EXPECT_EQ(out.o.data, std::vector<double>({10, 11, 21, 22}));
}

// A global position beyond a sequence's end does not exist in it (contract §2.10): global 5
// is refused by no sequence, absent from the 2-token one, and a global key of the 6-token one.
TEST(Varlen, GlobalPositionsBeyondASequenceDoNotExistInIt) {
  PatternSpec spec;
  spec.kind = PatternKind::longformer;
  spec.window = 0;
  spec.global = {5};
  const Tensor<uint8_t> m = varlen_allowed_mask(spec, 1, {{0, 2, 8}, {0, 2, 8}});
  ASSERT_EQ(m.shape, Shape({1, 8, 8}));
  auto at = [&](int64_t i, int64_t j) { return m.data[static_cast<size_t>(i * 8 + j)]; };
  EXPECT_EQ(at(0, 0) + at(0, 1) + at(1, 0) + at(1, 1), 2);  // sequence 0: the diagonal only
  for (int64_t i = 2; i < 8; ++i) EXPECT_EQ(at(i, 2 + 5), 1) << i;  // every query sees key 5
  for (int64_t j = 2; j < 8; ++j) EXPECT_EQ(at(2 + 5, j), 1) << j;  // and it sees every key
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 2; j < 8; ++j) EXPECT_EQ(at(i, j) + at(j, i), 0);  // nothing between
}

// --- the walk against an independent construction ------------------------------------------

// The packed batch as one [1, H, total, d] problem whose explicit mask is block diagonal
// (and causal inside each block): equal to the walk when every sequence has L_q = L_k.
TEST(Varlen, EqualsTheBlockDiagonalMaskOfOneProblem) {
  const std::vector<int64_t> cu = {0, 3, 3, 10, 11, 17};
  const int64_t total = cu.back(), H = 4, Hkv = 2, D = 8;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    VarlenInputs in;
    in.q = random_tensor({total, H, D}, 1);
    in.k = random_tensor({total, Hkv, D}, 2);
    in.v = random_tensor({total, Hkv, D}, 3);
    in.varlen.cu_seqlens_q = cu;
    in.varlen.cu_seqlens_k = cu;
    in.spec = dense(causal);
    const Output walk = attend_varlen(oracle(), in);

    PatternSpec block;
    block.kind = PatternKind::explicit_mask;
    Tensor<uint8_t> mask({total, total}, 0);
    for (size_t b = 0; b + 1 < cu.size(); ++b)
      for (int64_t i = cu[b]; i < cu[b + 1]; ++i)
        for (int64_t j = cu[b]; j < cu[b + 1]; ++j)
          mask.data[static_cast<size_t>(i * total + j)] = !causal || j <= i;
    block.mask = mask;
    const Pattern pattern = materialize(block, {1, H, total, total});
    auto bhsd = [](const Tensor<double>& x) {  // [total, H, d] -> [1, H, total, d]
      return packed_rows(x, 0, x.dim(0));
    };
    const AttentionResult one = a1_dense_masked(bhsd(in.q), bhsd(in.k), bhsd(in.v), pattern,
                                                nullptr, ScoreMods{});
    Tensor<double> o({total, H, D});
    scatter_packed_rows(one.o, o, 0);
    EXPECT_TRUE(check_close(walk.o, o, {1e-13, 1e-13}).pass);
    Tensor<double> lse({H, total});
    scatter_packed_lse(one.lse, lse, 0);
    EXPECT_TRUE(check_close(walk.lse, lse, {1e-13, 1e-13}).pass);
  }
}

// A cache as the problem on its filled prefix, the prefix copied here by a loop; pages
// shuffled, one page shared by two elements, table entries past the length −1.
struct CacheCase {
  CacheInputs paged, contiguous;
  std::vector<Tensor<double>> prefix_k, prefix_v;  // per element [1, H_kv, n_b, d]
};

CacheCase cache_case(const std::vector<int64_t>& seqlens, int64_t Hq, int64_t Hkv, int64_t Lq,
                     const PatternSpec& spec) {
  const int64_t B = static_cast<int64_t>(seqlens.size()), D = 8, page = 4, max_pages = 5;
  const int64_t cap = page * max_pages;
  CacheCase c;
  Tensor<double> q = random_tensor({B, Hq, Lq, D}, 10);
  Tensor<double> kc = random_tensor({B, Hkv, cap, D}, 11), vc = random_tensor({B, Hkv, cap, D}, 12);
  // Element 1 shares element 0's first page (a common prefix): same keys in the cache.
  for (int64_t h = 0; h < Hkv; ++h)
    for (int64_t t = 0; t < page && B > 1; ++t)
      for (int64_t e = 0; e < D; ++e) {
        const size_t from = static_cast<size_t>(((0 * Hkv + h) * cap + t) * D + e);
        const size_t to = static_cast<size_t>(((1 * Hkv + h) * cap + t) * D + e);
        kc.data[to] = kc.data[from];
        vc.data[to] = vc.data[from];
      }
  // The pages of element b, page m, go to pool page perm[b * max_pages + m] (shuffled);
  // element 1's page 0 is element 0's page 0.
  std::vector<int64_t> perm(static_cast<size_t>(B * max_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  std::swap(perm[1], perm[perm.size() / 2]);
  const int64_t pool = B * max_pages;
  Tensor<double> kp({pool, Hkv, page, D}, NAN), vp({pool, Hkv, page, D}, NAN);  // unused: NaN
  KvCache table;
  table.cache_seqlens = seqlens;
  table.max_pages = max_pages;
  table.block_table.assign(static_cast<size_t>(B * max_pages), -1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m * page < seqlens[static_cast<size_t>(b)]; ++m) {
      const int64_t dst = (b == 1 && m == 0) ? perm[0] : perm[static_cast<size_t>(b * max_pages + m)];
      table.block_table[static_cast<size_t>(b * max_pages + m)] = dst;
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t s = 0; s < page; ++s)
          for (int64_t e = 0; e < D; ++e) {
            const size_t from = static_cast<size_t>(((b * Hkv + h) * cap + m * page + s) * D + e);
            const size_t to = static_cast<size_t>(((dst * Hkv + h) * page + s) * D + e);
            kp.data[to] = kc.data[from];
            vp.data[to] = vc.data[from];
          }
    }
  // The contiguous cache's empty slots hold NaN: they are never read (contract §2.11).
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t t = seqlens[static_cast<size_t>(b)]; t < cap; ++t)
        for (int64_t e = 0; e < D; ++e) {
          const size_t at = static_cast<size_t>(((b * Hkv + h) * cap + t) * D + e);
          kc.data[at] = vc.data[at] = NAN;
        }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = seqlens[static_cast<size_t>(b)];
    Tensor<double> pk({1, Hkv, n, D}), pv({1, Hkv, n, D});
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t e = 0; e < D; ++e) {
          pk.data[static_cast<size_t>((h * n + t) * D + e)] = kc.data[static_cast<size_t>(((b * Hkv + h) * cap + t) * D + e)];
          pv.data[static_cast<size_t>((h * n + t) * D + e)] = vc.data[static_cast<size_t>(((b * Hkv + h) * cap + t) * D + e)];
        }
    c.prefix_k.push_back(pk);
    c.prefix_v.push_back(pv);
  }
  c.contiguous.q = q, c.contiguous.k = kc, c.contiguous.v = vc;
  c.contiguous.cache.cache_seqlens = seqlens;
  c.contiguous.spec = spec;
  c.paged = c.contiguous;
  c.paged.k = kp, c.paged.v = vp;
  c.paged.cache = table;
  return c;
}

TEST(KvCache, EqualsAttentionOnTheFilledPrefixContiguousAndPaged) {
  for (const PatternSpec& spec : {dense(), dense(true), window(3, true)}) {
    for (int64_t g : {1, 8}) {
      SCOPED_TRACE(describe(spec) + ", g = " + std::to_string(g));
      // n_b = 0, 1, the whole capacity (20), and one shorter than L_q.
      CacheCase c = cache_case({0, 1, 20, 2}, 8, 8 / g, 3, spec);
      const Output contiguous = attend_cache(oracle(), c.contiguous);
      const Output paged = attend_cache(oracle(), c.paged);
      EXPECT_EQ(contiguous.o.data, paged.o.data);
      EXPECT_EQ(contiguous.lse.data, paged.lse.data);
      const int64_t B = c.contiguous.q.dim(0), per_b = c.contiguous.q.numel() / B;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t n = c.contiguous.cache.cache_seqlens[static_cast<size_t>(b)];
        const Tensor<double> qb = [&] {
          Tensor<double> t({1, 8, 3, 8});
          std::copy_n(c.contiguous.q.ptr() + b * per_b, per_b, t.ptr());
          return t;
        }();
        if (n == 0) {  // no key: fully masked rows
          for (int64_t r = 0; r < 8 * 3; ++r) EXPECT_EQ(contiguous.lse.data[static_cast<size_t>(b * 24 + r)], -INFINITY);
          continue;
        }
        const Pattern pattern = materialize(spec, {1, 8, 3, n});
        const AttentionResult want =
            a1_dense_masked(qb, c.prefix_k[static_cast<size_t>(b)], c.prefix_v[static_cast<size_t>(b)],
                            pattern, nullptr, ScoreMods{});
        for (int64_t r = 0; r < 8 * 3; ++r) {
          const double got = contiguous.lse.data[static_cast<size_t>(b * 24 + r)];
          const double exp = want.lse.data[static_cast<size_t>(r)];
          if (std::isinf(exp)) EXPECT_EQ(got, exp);
          else EXPECT_NEAR(got, exp, 1e-13) << "b " << b << " row " << r;
        }
        for (int64_t e = 0; e < want.o.numel(); ++e)
          EXPECT_NEAR(contiguous.o.data[static_cast<size_t>(b * want.o.numel() + e)],
                      want.o.data[static_cast<size_t>(e)], 1e-13);
      }
    }
  }
}

// The query of a decode step against a cache of 4096 slots with 1000 filled: the cache
// layout and a key padding mask over the same slots disagree about the query (contract
// §2.11: the cache never makes a query padded) — the difference the definition exists for.
TEST(KvCache, AQueryIsNeverPaddedByTheEmptySlots) {
  CacheInputs in;
  in.q = random_tensor({1, 2, 1, 16}, 20);
  in.k = random_tensor({1, 2, 4096, 16}, 21);
  in.v = random_tensor({1, 2, 4096, 16}, 22);
  in.cache.cache_seqlens = {1000};
  in.spec = dense(true);
  const Output out = attend_cache(oracle(), in);
  // p = 0 + 1000 − 1 = 999: all 1000 filled keys, a real row with a finite lse.
  for (double l : out.lse.data) EXPECT_TRUE(std::isfinite(l));
  PatternSpec padded = dense(true);
  padded.key_padding_mask = Tensor<uint8_t>({1, 4096}, 0);
  std::fill_n(padded.key_padding_mask->data.begin(), 1000, 1);
  const Pattern pattern = materialize(padded, {1, 2, 1, 4096});
  const AttentionResult masked = a1_dense_masked(in.q, in.k, in.v, pattern, nullptr);
  for (double l : masked.lse.data) EXPECT_EQ(l, -INFINITY);  // the query sits at padded 4095
}

// --- kernels through the walk --------------------------------------------------------------

// Inputs on a 1/32 grid in [−4, 4): exact in bfloat16, so the bf16 kernels see the oracle's.
Tensor<double> grid_tensor(const Shape& shape, uint64_t seed) {
  Tensor<double> t = random_tensor(shape, seed, -4.0, 4.0);
  for (double& x : t.data) x = std::floor(x * 32.0) / 32.0;
  return t;
}

TEST(Varlen, EveryServingCpuKernelMatchesTheOracleWalk) {
  const std::vector<int64_t> cu_q = {0, 1, 1, 17, 30, 30}, cu_k = {0, 5, 9, 26, 39, 41};
  int kernels_run = 0;
  for (const PatternSpec& spec : {dense(), dense(true), window(3), window(2, true)}) {
    for (int64_t Hkv : {1, 8}) {
      VarlenInputs in;
      in.q = grid_tensor({cu_q.back(), 8, 16}, 30);
      in.k = grid_tensor({cu_k.back(), Hkv, 16}, 31);
      in.v = grid_tensor({cu_k.back(), Hkv, 16}, 32);
      for (Tensor<double>* t : {&in.q, &in.k}) for (double& x : t->data) x /= 4.0;
      in.varlen = {cu_q, cu_k};
      in.spec = spec;
      in.mods.sinks = tensor({8}, {0, 1, -1, 2, 0.5, -0.5, 1.5, 0});
      const Output want = attend_varlen(oracle(), in);
      const Pattern probe = materialize(spec, {1, 8, 16, 17});
      for (const Kernel& k : kernels()) {
        if (k.target != Target::cpu || !k.exact || !k.serves(probe)) continue;
        if ((k.features & (kGqa | kSinks)) != (kGqa | kSinks)) continue;
        SCOPED_TRACE(std::string(k.name) + " on " + describe(spec) + ", H_kv " + std::to_string(Hkv));
        const Output got = attend_varlen(k, in);
        const Tolerance tol{k.atol, k.rtol};
        EXPECT_TRUE(check_close(got.o32, want.o, tol).pass) << check_close(got.o32, want.o, tol).reason;
        EXPECT_TRUE(check_close(got.lse32, want.lse, tol).pass);
        ++kernels_run;
      }
    }
  }
  EXPECT_GE(kernels_run, 16);  // k01/k06 on dense, k02/k03/k06 on window, bf16 twins, ×2 H_kv
}

// --- a kernel reading the packed batch in place (kVarlen) -----------------------------------

// A stand-in kernel that records every problem it is handed and answers with the oracle
// walk on that problem (so its output is right only if the problem carries the whole
// batch: packed q/k/v, cu_seqlens, spec, scale and mods).
struct SeenProblems {
  int calls = 0;
  std::vector<bool> packed;
  std::vector<AttentionShape> shapes;
  std::vector<PatternSizes> sizes;
  std::vector<Varlen> varlens;
};
SeenProblems g_seen;

void run_recording(const Problem& p, Output& out) {
  ++g_seen.calls;
  g_seen.packed.push_back(p.varlen.has_value());
  g_seen.shapes.push_back(p.shape);
  g_seen.sizes.push_back(p.pattern->sizes);
  if (!p.varlen) {  // one sequence as [1, H, L, d]
    const AttentionResult r = a1_dense_masked(p.q, p.k, p.v, *p.pattern, &p.scale, p.mods);
    out.o32 = tensor_cast<float>(r.o);
    out.lse32 = tensor_cast<float>(r.lse);
    return;
  }
  g_seen.varlens.push_back(*p.varlen);
  VarlenInputs in;
  in.q = p.q;
  in.k = p.k;
  in.v = p.v;
  in.varlen = *p.varlen;
  in.spec = p.pattern->spec;
  in.scale = &p.scale;
  in.mods = p.mods;
  const Output walked = attend_varlen(oracle(), in);
  out.o32 = tensor_cast<float>(walked.o);
  out.lse32 = tensor_cast<float>(walked.lse);
}
bool serves_dense_only(const Pattern& p) { return p.spec.kind == PatternKind::dense; }

Kernel recording_kernel(unsigned features) {
  return Kernel{"test_recording", Target::cuda, DType::float32, true, "a1_dense_masked", 0.0, 0.0,
                "dense", "records its problems", features, &serves_dense_only, &run_recording};
}

// Sequences lq/lk: 1/5, 0/4 (empty), 3/0 (queries, no keys), 6/9, 2/2; H_q 4, H_kv 2.
VarlenInputs mixed_batch() {
  VarlenInputs in;
  in.varlen = {{0, 1, 1, 4, 10, 12}, {0, 5, 9, 9, 18, 20}};
  in.q = random_tensor({12, 4, 8}, 71);
  in.k = random_tensor({20, 2, 8}, 72);
  in.v = random_tensor({20, 2, 8}, 73);
  in.spec = dense(true);
  in.mods.sinks = tensor({4}, {0.5, -1, 0, 2});
  in.mods.alibi_slopes = random_tensor({5, 4}, 74, 0.0, 0.3);  // [B, H_q]: one row per sequence
  return in;
}

TEST(VarlenInPlace, AKernelListingKVarlenGetsTheWholeBatchInOneCall) {
  const VarlenInputs in = mixed_batch();
  const Output want = attend_varlen(oracle(), in);
  g_seen = {};
  const Output got = attend_varlen(recording_kernel(kModern | kVarlen), in);
  ASSERT_EQ(g_seen.calls, 1);
  ASSERT_TRUE(g_seen.packed[0]);
  EXPECT_EQ(g_seen.varlens[0].cu_seqlens_q, in.varlen.cu_seqlens_q);
  EXPECT_EQ(g_seen.varlens[0].cu_seqlens_k, in.varlen.cu_seqlens_k);
  const AttentionShape& s = g_seen.shapes[0];
  EXPECT_EQ(s.batch, 5);  // the sequences: ALiBi [B, H_q] rows index them
  EXPECT_EQ(s.seq_len_q, 12);
  EXPECT_EQ(s.seq_len_k, 20);
  EXPECT_EQ(s.num_heads, 4);
  EXPECT_EQ(s.num_kv_heads, 2);
  // The pattern of the longest sequence (6 queries, 9 keys), batch 1.
  EXPECT_EQ(g_seen.sizes[0].seq_len_q, 6);
  EXPECT_EQ(g_seen.sizes[0].seq_len_k, 9);
  EXPECT_EQ(g_seen.sizes[0].batch, 1);
  const Tolerance tol = kTolFloat32;
  EXPECT_TRUE(check_close(got.o32, want.o, tol).pass) << check_close(got.o32, want.o, tol).reason;
  EXPECT_TRUE(check_close(got.lse32, want.lse, tol).pass) << check_close(got.lse32, want.lse, tol).reason;
}

TEST(VarlenInPlace, OtherKernelsAreWalkedOneSequenceWithKeysAtATime) {
  const VarlenInputs in = mixed_batch();
  g_seen = {};
  const Output got = attend_varlen(recording_kernel(kModern), in);
  EXPECT_EQ(g_seen.calls, 3);  // sequences 0, 3, 4: the others have no query or no key
  for (bool packed : g_seen.packed) EXPECT_FALSE(packed);
  const Output want = attend_varlen(oracle(), in);
  EXPECT_TRUE(check_close(got.o32, want.o, kTolFloat32).pass);
  // Without the feature the packed problem itself is refused by name (Kernel::run).
  const Pattern pattern = sequence_pattern(in.spec, 4, 6, 9);
  Output out;
  try {
    recording_kernel(kModern).run(make_varlen_problem(in.q, in.k, in.v, in.varlen, pattern, nullptr, in.mods), out);
    FAIL() << "a kernel without kVarlen accepted a packed problem";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::impl);
    EXPECT_NE(std::string(e.what()).find("a packed batch read in place"), std::string::npos) << e.what();
  }
}

TEST(VarlenInPlace, NoKeyAnywhereNeedsNoCallAndAnUnservedSpecIsRefusedByName) {
  VarlenInputs in = mixed_batch();
  in.varlen.cu_seqlens_k = {0, 0, 0, 0, 0, 0};
  in.k = Tensor<double>({0, 2, 8});
  in.v = Tensor<double>({0, 2, 8});
  g_seen = {};
  const Output got = attend_varlen(recording_kernel(kModern | kVarlen), in);
  EXPECT_EQ(g_seen.calls, 0);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t t = 0; t < 12; ++t) EXPECT_EQ(got.lse32.data[h * 12 + t], static_cast<float>(in.mods.sink(h)));
  in = mixed_batch();
  in.spec = window(2, true);
  try {
    attend_varlen(recording_kernel(kModern | kVarlen), in);
    FAIL() << "a window spec reached a dense-only kernel";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::impl);
  }
  EXPECT_EQ(g_seen.calls, 0);
}

TEST(KvCache, EveryServingCpuKernelMatchesTheOracleInPlaceOrWalked) {
  int kernels_run = 0;
  for (const PatternSpec& spec : {dense(true), window(5, true)}) {
    CacheCase c = cache_case({0, 1, 20, 7}, 8, 1, 4, spec);
    for (CacheInputs* in : {&c.contiguous, &c.paged}) {
      for (Tensor<double>* t : {&in->q, &in->k, &in->v})
        for (double& x : t->data) x = std::isnan(x) ? x : std::floor(x * 32.0) / 32.0;
      const Output want = attend_cache(oracle(), *in);
      const Pattern probe = materialize(spec, {1, 8, 4, 20});
      for (const Kernel& k : kernels()) {
        if (k.target != Target::cpu || !k.exact || !k.serves(probe) || !(k.features & kGqa)) continue;
        SCOPED_TRACE(std::string(k.name) + (in->cache.paged() ? " paged" : " contiguous"));
        const Output got = attend_cache(k, *in);
        const Tolerance tol{k.atol, k.rtol};
        EXPECT_TRUE(check_close(got.o32, want.o, tol).pass) << check_close(got.o32, want.o, tol).reason;
        EXPECT_TRUE(check_close(got.lse32, want.lse, tol).pass);
        ++kernels_run;
      }
    }
  }
  EXPECT_GE(kernels_run, 8);
}

// --- gradients (contract §7.8) -------------------------------------------------------------

// L = Σ dO · o over the packed batch; central differences of the oracle walk, step 1e-5.
double loss(const VarlenInputs& in, const Tensor<double>& dout) {
  const Output o = attend_varlen(oracle(), in);
  double l = 0;
  for (size_t i = 0; i < o.o.data.size(); ++i) l += o.o.data[i] * dout.data[i];
  return l;
}

TEST(Varlen, GradientsMatchFiniteDifferences) {
  VarlenInputs in;
  const std::vector<int64_t> cu_q = {0, 2, 2, 7}, cu_k = {0, 3, 4, 9};
  in.q = random_tensor({7, 4, 4}, 40);
  in.k = random_tensor({9, 2, 4}, 41);
  in.v = random_tensor({9, 2, 3}, 42);
  in.varlen = {cu_q, cu_k};
  in.spec = window(2, true);
  in.mods.sinks = tensor({4}, {0.3, -0.2, 1.0, 0.0});
  in.mods.softcap = 1.5;
  const Tensor<double> dout = random_tensor({7, 4, 3}, 43);
  const GradOutput g = attend_varlen_grad(find_grad_kernel("b1_dense_masked_grad"), in, dout);
  ASSERT_EQ(g.dq.shape, in.q.shape);
  ASSERT_EQ(g.dk.shape, in.k.shape);
  ASSERT_EQ(g.dv.shape, in.v.shape);
  ASSERT_EQ(g.dsinks.shape, Shape({4}));
  const double h = 1e-5;
  auto fd = [&](Tensor<double>& x, size_t i) {
    const double keep = x.data[i];
    x.data[i] = keep + h;
    const double up = loss(in, dout);
    x.data[i] = keep - h;
    const double down = loss(in, dout);
    x.data[i] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < in.q.data.size(); i += 3) EXPECT_NEAR(g.dq.data[i], fd(in.q, i), 1e-7) << "dq " << i;
  for (size_t i = 0; i < in.k.data.size(); i += 2) EXPECT_NEAR(g.dk.data[i], fd(in.k, i), 1e-7) << "dk " << i;
  for (size_t i = 0; i < in.v.data.size(); i += 2) EXPECT_NEAR(g.dv.data[i], fd(in.v, i), 1e-7) << "dv " << i;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(g.dsinks.data[i], fd(*in.mods.sinks, i), 1e-7) << "dsinks " << i;
}

TEST(Varlen, BackwardKernelsMatchTheGradientOracleWalk) {
  VarlenInputs in;
  in.q = random_tensor({20, 2, 8}, 50);
  in.k = random_tensor({23, 2, 8}, 51);
  in.v = random_tensor({23, 2, 8}, 52);
  in.varlen = {{0, 6, 6, 20}, {0, 9, 10, 23}};
  in.spec = window(3, true);
  const Tensor<double> dout = random_tensor({20, 2, 8}, 53);
  const GradOutput want = attend_varlen_grad(find_grad_kernel("b1_dense_masked_grad"), in, dout);
  int run = 0;
  const Pattern probe = materialize(in.spec, {1, 2, 6, 9});
  for (const GradKernel& k : grad_kernels()) {
    if (k.target != Target::cpu || !k.serves(probe)) continue;
    SCOPED_TRACE(k.name);
    const GradOutput got = attend_varlen_grad(k, in, dout);
    const Tolerance tol{k.atol, k.rtol};
    EXPECT_TRUE(check_close(got.dq32, want.dq, tol).pass);
    EXPECT_TRUE(check_close(got.dk32, want.dk, tol).pass);
    EXPECT_TRUE(check_close(got.dv32, want.dv, tol).pass);
    ++run;
  }
  EXPECT_GE(run, 2);  // kb01, kb02
}

// --- bad input (contract §5.1) -------------------------------------------------------------

void expect_field(Field field, const std::function<void()>& f, const std::string& says) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

// The walk's float32 path (a CPU kernel gets float32 rows only, api/layout_walk.h): the same
// bits as the kernel on make_problem's problems of the sliced sequences, whether the
// roundings are prepared (round_varlen_inputs) or made while reading; and the float32
// guard's refusals still name q and scale.
TEST(Varlen, TheFloat32PathEqualsMakeProblemBitForBitAndRefusesTheSame) {
  const std::vector<int64_t> cu_q = {0, 3, 3, 20, 29}, cu_k = {0, 5, 7, 24, 40};
  VarlenInputs in;
  in.q = grid_tensor({cu_q.back(), 4, 8}, 40);
  in.k = grid_tensor({cu_k.back(), 2, 8}, 41);
  in.v = grid_tensor({cu_k.back(), 2, 8}, 42);
  in.varlen = {cu_q, cu_k};
  in.spec = window(2, true);
  for (const char* name : {"cpu_k02_window_band", "cpu_k06_generic_tiles_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& kernel = find_kernel(name);
    VarlenInputs rounded = in;
    round_varlen_inputs(rounded);
    const Output walk = attend_varlen(kernel, in), walk32 = attend_varlen(kernel, rounded);
    EXPECT_EQ(walk.o32.data, walk32.o32.data);
    EXPECT_EQ(walk.lse32.data, walk32.lse32.data);
    for (int64_t b = 0; b < in.varlen.num_sequences(); ++b) {
      const int64_t q0 = cu_q[b], q1 = cu_q[b + 1], k0 = cu_k[b], k1 = cu_k[b + 1];
      if (q1 == q0) continue;
      const Pattern pattern = sequence_pattern(in.spec, 4, q1 - q0, k1 - k0);
      const Problem p = make_problem(packed_rows(in.q, q0, q1), packed_rows(in.k, k0, k1),
                                     packed_rows(in.v, k0, k1), pattern, nullptr);
      Output ob;
      kernel.run(p, ob);
      EXPECT_EQ(packed_rows(walk.o32, q0, q1).data, ob.o32.data) << "sequence " << b;
    }
  }
  const Kernel& k02 = find_kernel("cpu_k02_window_band");
  VarlenInputs big = in;
  big.q.data[static_cast<size_t>(25 * 4 * 8)] = 1e39;  // in sequence 3
  expect_field(Field::q, [&] { attend_varlen(k02, big); }, "beyond float32's range");
  round_varlen_inputs(big);
  expect_field(Field::q, [&] { attend_varlen(k02, big); }, "beyond float32's range");
  static const double huge = 1e36;
  VarlenInputs scaled = in;
  scaled.scale = &huge;
  round_varlen_inputs(scaled);
  expect_field(Field::scale, [&] { attend_varlen(k02, scaled); }, "float32");
  VarlenInputs wrong = in;
  wrong.q32 = Tensor<float>({2, 2});
  EXPECT_THROW(attend_varlen(k02, wrong), InvalidArgument);
}

// In place, k09's problem keeps only the float32 copies of the cache (attend_cache): its
// guard still bounds the filled slots only — an empty slot beyond float32's range (inf in
// the float32 copy) is never read, a filled one is refused naming k or v.
TEST(KvCache, TheFloat32CacheProblemBoundsOnlyTheFilledSlots) {
  const CacheCase c = cache_case({0, 1, 20, 2}, 8, 1, 3, dense(true));
  const int64_t cap = 20, D = 8;
  auto at = [&](int64_t b, int64_t t) { return static_cast<size_t>((b * 1 * cap + t) * D); };
  for (const char* name : {"cpu_k09_decode", "cpu_k09_decode_bf16"}) {
    SCOPED_TRACE(name);
    const Kernel& k09 = find_kernel(name);
    const Output clean = attend_cache(k09, c.contiguous);
    CacheInputs stale = c.contiguous;
    stale.k.data[at(3, 5)] = 1e39;  // element 3 holds 2 keys: slot 5 is empty
    stale.v.data[at(3, 7)] = -1e39;
    const Output got = attend_cache(k09, stale);
    EXPECT_EQ(got.o32.data, clean.o32.data);
    EXPECT_EQ(got.lse32.data, clean.lse32.data);
    CacheInputs filled = c.contiguous;
    filled.k.data[at(3, 1)] = 1e39;
    expect_field(Field::k, [&] { attend_cache(k09, filled); }, "float32");
    filled = c.contiguous;
    filled.v.data[at(2, 19)] = 1e39;
    expect_field(Field::v, [&] { attend_cache(k09, filled); }, "float32");
  }
}

TEST(Varlen, BadCuSeqlensAreNamed) {
  auto with = [](std::vector<int64_t> q, std::vector<int64_t> k) {
    VarlenInputs in = hand_varlen();
    in.varlen = {std::move(q), std::move(k)};
    return [in] { attend_varlen(oracle(), in); };
  };
  expect_field(Field::cu_seqlens_q, with({1, 1, 1, 3}, {0, 2, 2, 4}), "cu_seqlens_q[0] = 1");
  expect_field(Field::cu_seqlens_q, with({0, 2, 1, 3}, {0, 2, 2, 4}), "never decrease");
  expect_field(Field::cu_seqlens_q, with({0, 1, 1, 2}, {0, 2, 2, 4}), "total");
  expect_field(Field::cu_seqlens_k, with({0, 1, 1, 3}, {0, 4}), "cu_seqlens_k length");
  expect_field(Field::cu_seqlens_q, with({0}, {0}), "B + 1 >= 2");
  VarlenInputs in = hand_varlen();
  in.spec.key_padding_mask = Tensor<uint8_t>({1, 4}, 1);
  expect_field(Field::key_padding_mask, [&] { attend_varlen(oracle(), in); }, "packed batch");
  in = hand_varlen();
  in.q.shape = {1, 3, 1, 1};
  EXPECT_THROW(attend_varlen(oracle(), in), InvalidArgument);
}

TEST(KvCache, BadCacheSeqlensAndBlockTablesAreNamed) {
  CacheCase c = cache_case({3, 20}, 2, 1, 1, dense());
  CacheInputs in = c.contiguous;
  in.cache.cache_seqlens = {3, 21};
  expect_field(Field::cache_seqlens, [&] { attend_cache(oracle(), in); }, "cache_seqlens[1] = 21");
  in.cache.cache_seqlens = {-1, 2};
  expect_field(Field::cache_seqlens, [&] { attend_cache(oracle(), in); }, "in [0, 20]");
  in.cache.cache_seqlens = {3};
  expect_field(Field::cache_seqlens, [&] { attend_cache(oracle(), in); }, "q's batch");
  in = c.paged;
  in.cache.block_table[0] = 99;  // page 0 of element 0 is read (3 keys)
  expect_field(Field::block_table, [&] { attend_cache(oracle(), in); }, "block_table[0][0] = 99");
  in = c.paged;
  in.cache.block_table[1] = 99;  // page 1 of element 0 is not read: any value
  EXPECT_NO_THROW(attend_cache(oracle(), in));
}

}  // namespace
}  // namespace sparseattn::api
