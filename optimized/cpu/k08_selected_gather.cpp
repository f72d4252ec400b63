// k08 — token-level selected attention, OpenMP (contract §3.16), two twins from one template
// over the input element type: cpu_k08_selected_gather (float32 q, k, v) matches
// a1_dense_masked within kTolFloat32; cpu_k08_selected_gather_bf16 (bf16 q, k, v, widened to
// float32 as each row is read, float32 arithmetic after) matches a1_dense_masked evaluated
// on the same bf16-rounded inputs within kTolBfloat16 (core/numerics.h, docs/numerics.md).
//
// What changed since k06: k06 walks the layout's tiles, so a query whose K listed keys lie
// scattered over L_k visits up to K tiles of 64 keys, most of their pairs masked. k08 reads
// the index table itself and touches exactly the listed rows: per (batch, kv head, query)
// it builds the row's key list once (selected_keys: -1, causal, padding, duplicates), then
// for each listed key loads k_j once and scores it against every query head sharing the
// list (the g heads of the group when H_sel <= H_kv: DSA's one list for all heads, NSA's
// one per kv head), then the softmax per head, then loads v_j once and adds p_hj·v_j to
// every head's output. Bytes gathered per (query, list): n·(d + d_v)·4 (bf16: ·2) for g
// heads' work.
// Counted duplicates enter as weights m_j: l = Σ m_j exp(s_j − m), o = Σ m_j exp(s_j − m) v_j / l.
// Each output row is written by one work item in a fixed order: thread-count independent.
// Built per SIMD build (isa_target.h, like k01-k06; dispatch.cpp, dispatch_bf16.cpp): the
// two builds agree within kTolFloat32, not bit for bit (8 vs 16 lanes).
// The per-query work is a small GEMM, done register-blocked over the listed rows read in
// place (blocked_unit, when the G heads sharing a list divide the vector's lanes and
// head_dim is a multiple of R = lanes / G): S = Q·K_selᵀ with G heads × R consecutive d per
// vector (one broadcast load of R key floats per FMA, T keys per block, the R partial sums
// folded to key-major scores), a vectorized softmax per head, P·V with G × C value vectors
// in registers per 64-key block; key rows prefetched two blocks ahead, value rows 8 keys
// ahead. Other head counts (3, 5, 6, ...; 16 in the avx2 build) keep the per-key path below.
// The bf16 twin widens one score block (T key rows) or one P·V block (64 value rows) at a
// time into L1-resident float32 rows; from there the arithmetic is float32's, in the same
// order.
// Measured: docs/benchmarks.md, "Selected attention: token-level gather (k08)" (2026-12-02,
// 1 thread, avx512 build): 62.6 GFLOP per CPU-second = 28% of the FMA peak at n 16384,
// K 2048, H_q 8 sharing one list (3.5x main's k08 in the same session; k06: 3.09x its CPU
// time); the bf16 twin 0.99x the float32 entry's time.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/isa_kernels.h"
#include "optimized/cpu/selected_kernels.h"
#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN

namespace {

using selected::widen;

// ---- The register-blocked path: G heads share a list, G divides the vector's lanes. ----
//
// S = Q (G × d) · K_selᵀ: a vector holds G heads × R = kLanes / G consecutive d of one
// key's dot products (lane e·R + r sums q_e[d]·k[d] over d ≡ r mod R), so each FMA does
// kLanes useful multiply-adds whatever G is; q is laid out once per unit as qr[d / R]
// [e][r], k's R floats are one broadcast load. T keys at a time (T accumulators cover the
// FMA latency on both pipes), then log2 R pairwise even/odd folds turn T vectors into T / R
// vectors of R keys × G heads: the scores come out key-major, [t][e].

// x in every lane. simd.h's splat is Vec{} + x, which GCC must compile as a scalar add of
// +0 (it cannot drop it: -0 + 0 is +0) before the broadcast; these are one vbroadcast,
// from memory when x was just loaded.
inline Vec lanes_of_float(float x) {
#if defined(SPARSEATTN_ISA_AVX512)
  return reinterpret_cast<Vec>(_mm512_set1_ps(x));
#else
  return reinterpret_cast<Vec>(_mm256_set1_ps(x));
#endif
}
inline Vec lanes_of_pair(const float* p) {
  double x;
  std::memcpy(&x, p, sizeof x);
#if defined(SPARSEATTN_ISA_AVX512)
  return reinterpret_cast<Vec>(_mm512_set1_pd(x));
#else
  return reinterpret_cast<Vec>(_mm256_set1_pd(x));
#endif
}

// R consecutive floats at p, repeated over the vector: [p0 .. pR-1, p0 .. pR-1, ...].
template <int R>
inline Vec repeat(const float* p) {
  if constexpr (R == 1) {
    return lanes_of_float(*p);
  } else if constexpr (R == kLanes) {
    return loadv(p);
  } else if constexpr (R == 2) {
    return lanes_of_pair(p);  // one vbroadcastsd: the two floats as one 64-bit element
  } else if constexpr (R == 4) {
#if defined(SPARSEATTN_ISA_AVX512)
    // The zero-masked forms: GCC 12's unmasked ones pass an undefined vector that
    // -Wmaybe-uninitialized reports (simd.h's vexp says the same).
    return reinterpret_cast<Vec>(_mm512_maskz_broadcast_f32x4(0xFFFF, _mm_loadu_ps(p)));
#else
    return reinterpret_cast<Vec>(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p)));
#endif
  } else {
#if defined(SPARSEATTN_ISA_AVX512)
    return reinterpret_cast<Vec>(_mm512_maskz_broadcast_f32x8(0xFFFF, _mm256_loadu_ps(p)));
#else
    static_assert(R != 8, "R = 8 is a whole 256-bit vector");
    return Vec{};
#endif
  }
}

// Lane i of the result: a[2i] + a[2i + 1] for i < kLanes / 2, then b's pairs.
template <size_t... I>
inline Vec fold_impl(Vec a, Vec b, std::index_sequence<I...>) {
  using VI = Simd<kLanes>::i;
  const Vec even = __builtin_shuffle(a, b, VI{static_cast<int32_t>(2 * I)...});
  const Vec odd = __builtin_shuffle(a, b, VI{static_cast<int32_t>(2 * I + 1)...});
  return even + odd;
}
inline Vec fold(Vec a, Vec b) { return fold_impl(a, b, std::make_index_sequence<kLanes>{}); }

template <int G>
struct Blocking {
  static constexpr int R = kLanes / G;      // d per lane group
  static constexpr int T = R > 8 ? R : 8;   // keys per score block
};

// Scores of T keys (rows[t], D floats each, D a multiple of R) against the unit's qr:
// out[t * G + e] = scale · <q_e, k_t>. Each dot sums d ≡ r (mod R) in d order, then the
// R partial sums by the fixed fold tree: the same on every thread.
template <int G>
inline void score_block(const float* qr, const float* const* rows, int64_t D, float scale,
                        float* out) {
  constexpr int R = Blocking<G>::R, T = Blocking<G>::T;
  Vec acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) acc[t] = splat(0.0f);
  const int64_t steps = D / R;
  for (int64_t s = 0; s < steps; ++s) {
    const Vec q = loadv(qr + s * kLanes);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] += q * repeat<R>(rows[t] + s * R);
  }
  int live = T;
#pragma GCC unroll 4
  for (int width = 1; width < R; width *= 2) {
#pragma GCC unroll 8
    for (int t = 0; t < live / 2; ++t) acc[t] = fold(acc[2 * t], acc[2 * t + 1]);
    live /= 2;
  }
#pragma GCC unroll 16
  for (int t = 0; t < live; ++t) storev(out + t * kLanes, acc[t] * scale);
}

// O (G × d_v) += P (n × G, key-major) · V_sel over keys [0, n): C vectors of d_v from d0
// per head in registers, one load of each value row's C vectors for all G heads.
template <int G, int C>
inline void pv_block(const float* p, const float* const* vrows, int64_t n, int64_t d0,
                     float* acc, int64_t Dv) {
  Vec a[G][C];
#pragma GCC unroll 16
  for (int e = 0; e < G; ++e)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) a[e][c] = loadv(acc + e * Dv + d0 + c * kLanes);
  for (int64_t t = 0; t < n; ++t) {
    // The first cache line this pass reads of the value row 8 keys ahead (measured: about
    // 5% off the DSA shape's time, TUNING.md).
    if (t + 8 < n) __builtin_prefetch(vrows[t + 8] + d0, 0, 3);
    const float* v = vrows[t] + d0;
    Vec x[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) x[c] = loadv(v + c * kLanes);
#pragma GCC unroll 16
    for (int e = 0; e < G; ++e) {
      const Vec pe = lanes_of_float(p[t * G + e]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) a[e][c] += pe * x[c];
    }
  }
#pragma GCC unroll 16
  for (int e = 0; e < G; ++e)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) storev(acc + e * Dv + d0 + c * kLanes, a[e][c]);
}

// Every cache line of a row of `count` elements, into L1 (Locality 3) or L2 (2).
template <int Locality, class E>
inline void prefetch_row(const E* row, int64_t count) {
  constexpr int64_t kLine = 64 / sizeof(E);
  for (int64_t x = 0; x < count; x += kLine) __builtin_prefetch(row + x, 0, Locality);
}

// Rows of E (float: as they are; bf16 bits: widened) as float32 rows: `out[t]` points at
// row t, in place for float, else in `buf` (count rows of `width`). The bf16 twin widens
// one score block or P·V key block at a time, so the widened rows stay in L1.
inline void as_float_rows(const float* const* rows, int64_t count, int64_t, std::vector<float>&,
                          const float** out) {
  for (int64_t t = 0; t < count; ++t) out[t] = rows[t];
}
inline void as_float_rows(const uint16_t* const* rows, int64_t count, int64_t width,
                          std::vector<float>& buf, const float** out) {
  buf.resize(static_cast<size_t>(count * width));
  for (int64_t t = 0; t < count; ++t) {
    float* dst = buf.data() + t * width;
    const uint16_t* src = rows[t];
#pragma omp simd
    for (int64_t d = 0; d < width; ++d) dst[d] = widen(src[d]);
    out[t] = dst;
  }
}

// Per-thread scratch of the blocked path; E the input element type.
template <class E>
struct Scratch {
  std::vector<float> qr, scores, acc, kbuf, vbuf;
  std::vector<const E*> krows, vrows;
};

// One unit (G heads, one list of n >= 1 keys at krows/vrows, rows of E): scores, softmax
// per head with the counted weights w (nullptr: all 1), P·V; writes o and lse.
template <int G, class E>
void blocked_unit(const float* qr, int64_t n, const float* w, int64_t D, int64_t Dv,
                  float scale, Scratch<E>& sc, float* const* o_rows, float* const* lse) {
  constexpr int T = Blocking<G>::T;
  const int64_t npad = (n + T - 1) / T * T;
  for (int64_t t = n; t < npad; ++t) sc.krows[static_cast<size_t>(t)] = sc.krows[0];
  sc.scores.resize(static_cast<size_t>(npad * G));
  float* s = sc.scores.data();
  // The rows are scattered over L_k, beyond the hardware prefetcher's reach: while a block
  // is scored, the key rows two blocks ahead are fetched into L1 (one block ahead, or the
  // value rows fetched here for P·V as well, measured slower: TUNING.md).
  for (int64_t t0 = 0; t0 < npad; t0 += T) {
    if (t0 + 2 * T < npad)
      for (int t = 0; t < T; ++t) prefetch_row<3>(sc.krows[static_cast<size_t>(t0 + 2 * T + t)], D);
    const float* rows[T];
    as_float_rows(sc.krows.data() + t0, T, D, sc.kbuf, rows);
    score_block<G>(qr, rows, D, scale, s + t0 * G);
  }
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t x = n * G; x < npad * G; ++x) s[x] = neg_inf;  // padding keys: weight 0
  // Softmax per head on the key-major scores: lane j of every vector is head j mod G.
  const int64_t nvec = npad * G / kLanes;
  Vec mv = splat(neg_inf);
  for (int64_t x = 0; x < nvec; ++x) {
    const Vec y = loadv(s + x * kLanes);
    mv = y > mv ? y : mv;
  }
  float m[G];
  for (int e = 0; e < G; ++e) {
    m[e] = mv[e];
    for (int j = e + G; j < kLanes; j += G) m[e] = std::max(m[e], mv[j]);
  }
  Vec mb;
  for (int j = 0; j < kLanes; ++j) mb[j] = m[j % G];
  Vec lv = splat(0.0f);
  if (w == nullptr) {
    for (int64_t x = 0; x < nvec; ++x) {
      const Vec p = vexp(loadv(s + x * kLanes) - mb);
      storev(s + x * kLanes, p);
      lv += p;
    }
  } else {
    for (int64_t x = 0; x < nvec; ++x) {
      Vec wv;
      for (int j = 0; j < kLanes; ++j) {
        const int64_t t = (x * kLanes + j) / G;
        wv[j] = t < n ? w[t] : 0.0f;
      }
      const Vec p = vexp(loadv(s + x * kLanes) - mb) * wv;
      storev(s + x * kLanes, p);
      lv += p;
    }
  }
  float inv[G];
  for (int e = 0; e < G; ++e) {
    float l = lv[e];  // the lanes of head e in lane order: fixed
    for (int j = e + G; j < kLanes; j += G) l += lv[j];
    *lse[e] = m[e] + std::log(l);
    inv[e] = 1.0f / l;
  }
  // P·V in blocks of keys, so that each block's value rows stay in L1 across the d_v groups.
  constexpr int C = std::max(1, (kLanes == 16 ? 16 : 8) / G);
  const int64_t dvec = Dv / kLanes * kLanes;
  sc.acc.assign(static_cast<size_t>(G * Dv), 0.0f);
  float* acc = sc.acc.data();
  constexpr int64_t kKeyBlock = 64;
  for (int64_t t0 = 0; t0 < n; t0 += kKeyBlock) {
    const int64_t nb = std::min(kKeyBlock, n - t0);
    const float* pb = s + t0 * G;
    const float* vb[kKeyBlock];
    as_float_rows(sc.vrows.data() + t0, nb, Dv, sc.vbuf, vb);
    int64_t d0 = 0;
    for (; d0 + C * kLanes <= dvec; d0 += C * kLanes) pv_block<G, C>(pb, vb, nb, d0, acc, Dv);
    for (; d0 < dvec; d0 += kLanes) pv_block<G, 1>(pb, vb, nb, d0, acc, Dv);
    for (int64_t t = 0; t < nb && dvec < Dv; ++t)
      for (int e = 0; e < G; ++e)
        for (int64_t d = dvec; d < Dv; ++d) acc[e * Dv + d] += pb[t * G + e] * vb[t][d];
  }
  for (int e = 0; e < G; ++e)
    for (int64_t d = 0; d < Dv; ++d) o_rows[e][d] = acc[e * Dv + d] * inv[e];
}

template <class E>
using UnitFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float,
                        Scratch<E>&, float* const*, float* const*);

// The blocked unit for `share` heads, or nullptr when share does not divide the lanes or
// head_dim is not a multiple of R (then the per-key path below).
template <class E>
UnitFn<E> blocked_for(int64_t share, int64_t D) {
  auto fits = [&](int g) { return share == g && D % (kLanes / g) == 0; };
  if (fits(1)) return &blocked_unit<1, E>;
  if (fits(2)) return &blocked_unit<2, E>;
  if (fits(4)) return &blocked_unit<4, E>;
  if (fits(8)) return &blocked_unit<8, E>;
#if defined(SPARSEATTN_ISA_AVX512)
  if (fits(16)) return &blocked_unit<16, E>;
#endif
  return nullptr;
}

// ---- The per-key path: any number of heads sharing a list, any head_dim. ----

// exp(x) for x <= 0 (a score minus its row maximum), about 1 ulp: simd.h's vexp (Cephes
// expf) written per element and branch-free, so that the softmax loop below vectorizes
// (std::exp is a call per score; it took about half of k08's time). Below -87.3 exactly 0.
inline float exp_nonpositive(float x) {
  const float xc = x < -87.33654f ? -87.33654f : x;
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float two_n = __builtin_bit_cast(float, bits);
  return x < -87.33654f ? 0.0f : p * two_n;
}

// Scores of the G heads of a unit against n gathered keys, G a compile-time constant so
// that the accumulators stay in registers: q transposed to qt [D][G] (the heads in lanes),
// four keys at a time, one broadcast of k_j[d] per key and d — no horizontal sum per dot.
// scores[e * n + t] = scale * <q_e, k_keys[t]>, each dot summed over d in order.
// The bf16 twin calls it on a float32 panel of its gathered rows (keys 0..n-1).
template <int G>
void unit_scores(const float* qt, const float* kh, const int32_t* keys, int64_t n, int64_t D,
                 float scale, float* scores) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) {
    const float* k0 = kh + static_cast<int64_t>(keys[t]) * D;
    const float* k1 = kh + static_cast<int64_t>(keys[t + 1]) * D;
    const float* k2 = kh + static_cast<int64_t>(keys[t + 2]) * D;
    const float* k3 = kh + static_cast<int64_t>(keys[t + 3]) * D;
    float a0[G] = {}, a1[G] = {}, a2[G] = {}, a3[G] = {};
    for (int64_t d = 0; d < D; ++d) {
      const float* qd = qt + d * G;
      const float x0 = k0[d], x1 = k1[d], x2 = k2[d], x3 = k3[d];
#pragma omp simd
      for (int e = 0; e < G; ++e) {
        a0[e] += qd[e] * x0;
        a1[e] += qd[e] * x1;
        a2[e] += qd[e] * x2;
        a3[e] += qd[e] * x3;
      }
    }
    for (int e = 0; e < G; ++e) {
      scores[e * n + t] = scale * a0[e];
      scores[e * n + t + 1] = scale * a1[e];
      scores[e * n + t + 2] = scale * a2[e];
      scores[e * n + t + 3] = scale * a3[e];
    }
  }
  for (; t < n; ++t) {
    const float* kj = kh + static_cast<int64_t>(keys[t]) * D;
    float a[G] = {};
    for (int64_t d = 0; d < D; ++d) {
      const float* qd = qt + d * G;
      const float x = kj[d];
#pragma omp simd
      for (int e = 0; e < G; ++e) a[e] += qd[e] * x;
    }
    for (int e = 0; e < G; ++e) scores[e * n + t] = scale * a[e];
  }
}

using ScoresFn = void (*)(const float*, const float*, const int32_t*, int64_t, int64_t, float, float*);

// The fixed-width scorer for `share` heads, or nullptr (then the per-head dots below).
ScoresFn scores_for(int64_t share) {
  switch (share) {
    case 1: return &unit_scores<1>;
    case 2: return &unit_scores<2>;
    case 4: return &unit_scores<4>;
    case 8: return &unit_scores<8>;
    case 16: return &unit_scores<16>;
    default: return nullptr;
  }
}

// k08 on inputs of element type T (Inputs: float; InputsBf16: bf16 bits), `name` the
// registry entry for the refusal. Everything after the loads is float32 and the same code.
template <class In>
void selected_gather(const In& in, const Outputs& out, const char* name) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(in.q)>>;
  const Pattern& pattern = *in.pattern;
  if (!k08_serves(pattern))
    throw InvalidArgument("pattern", describe(pattern.spec), std::string(name) + " serves selected");
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Hkv = s.num_kv_heads, g = s.group();
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t hsel = pattern.selection.dim(1);
  // Heads that share one list: the whole group unless every query head has its own.
  const int64_t share = hsel == H && g > 1 ? 1 : g;
  const int64_t units = H / share;  // lists per batch element and query
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // bf16: the scorers read float32 panels of the gathered rows (widened once per unit,
  // vectorized) instead of widening one scalar per key and d in their loops.
  constexpr bool kWiden = !std::is_same_v<T, float>;
  const UnitFn<T> blocked = blocked_for<T>(share, D);
  const ScoresFn fixed = blocked != nullptr ? nullptr : scores_for(share);

#pragma omp parallel
  {
    std::vector<int32_t> keys, seen(static_cast<size_t>(Lk), -1);
    std::vector<float> weights, scores, acc, inv(static_cast<size_t>(share));
    std::vector<float> qt(static_cast<size_t>(share * D));  // the unit's q, heads in lanes
    std::vector<float> panel;     // bf16: the unit's gathered key rows widened, [n][D]
    std::vector<int32_t> rows;    // bf16: 0, 1, ..., n - 1 (the panel's rows)
    Scratch<T> sc;
    std::vector<float*> o_rows(static_cast<size_t>(share)), lse_rows(static_cast<size_t>(share));
#pragma omp for schedule(dynamic, 8)
    for (int64_t item = 0; item < B * units * Lq; ++item) {
      const int64_t i = item % Lq, u = (item / Lq) % units, b = item / (Lq * units);
      const int64_t h0 = u * share;  // first query head of the unit
      const int64_t hk = h0 / g;
      selected_keys(pattern, b, pattern.selection_row(h0), i, keys, weights, seen);
      const int64_t n = static_cast<int64_t>(keys.size());
      const T* kh = in.k + (b * Hkv + hk) * Lk * D;
      const T* vh = in.v + (b * Hkv + hk) * Lk * Dv;
      if (blocked != nullptr) {
        for (int64_t e = 0; e < share; ++e) {
          o_rows[static_cast<size_t>(e)] = out.o + ((b * H + h0 + e) * Lq + i) * Dv;
          lse_rows[static_cast<size_t>(e)] = out.lse + (b * H + h0 + e) * Lq + i;
        }
        if (n == 0) {
          for (int64_t e = 0; e < share; ++e) {
            *lse_rows[static_cast<size_t>(e)] = neg_inf;
            std::fill_n(o_rows[static_cast<size_t>(e)], Dv, 0.0f);
          }
          continue;
        }
        // q as qr[d / R][e][r] (blocked_unit's layout), R = lanes / share.
        const int64_t R = kLanes / share;
        sc.qr.resize(static_cast<size_t>(share * D));
        for (int64_t e = 0; e < share; ++e) {
          const T* qi = in.q + ((b * H + h0 + e) * Lq + i) * D;
          for (int64_t d = 0; d < D; ++d)
            sc.qr[static_cast<size_t>((d / R) * kLanes + e * R + d % R)] = widen(qi[d]);
        }
        // Row pointers (krows padded to a whole score block by blocked_unit).
        sc.krows.resize(static_cast<size_t>(n + kLanes));
        sc.vrows.resize(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) {
          const int64_t j = keys[static_cast<size_t>(t)];
          sc.krows[static_cast<size_t>(t)] = kh + j * D;
          sc.vrows[static_cast<size_t>(t)] = vh + j * Dv;
        }
        // Weights other than 1 exist only for counted duplicates.
        bool weighted = false;
        if (pattern.spec.duplicates == Duplicates::count)
          for (float x : weights) weighted |= x != 1.0f;
        blocked(sc.qr.data(), n, weighted ? weights.data() : nullptr, D, Dv, in.scale, sc,
                o_rows.data(), lse_rows.data());
        continue;
      }
      scores.assign(static_cast<size_t>(share * n), 0.0f);
      // Scores: each key row once, against every head of the unit.
      if (fixed != nullptr) {
        for (int64_t e = 0; e < share; ++e) {
          const T* qi = in.q + ((b * H + h0 + e) * Lq + i) * D;
          for (int64_t d = 0; d < D; ++d) qt[static_cast<size_t>(d * share + e)] = widen(qi[d]);
        }
        if constexpr (kWiden) {
          panel.resize(static_cast<size_t>(n * D));
          rows.resize(static_cast<size_t>(n));
          for (int64_t t = 0; t < n; ++t) {
            const T* kj = kh + static_cast<int64_t>(keys[t]) * D;
            float* dst = panel.data() + t * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) dst[d] = widen(kj[d]);
            rows[static_cast<size_t>(t)] = static_cast<int32_t>(t);
          }
          fixed(qt.data(), panel.data(), rows.data(), n, D, in.scale, scores.data());
        } else {
          fixed(qt.data(), kh, keys.data(), n, D, in.scale, scores.data());
        }
      }
      for (int64_t t = 0; fixed == nullptr && t < n; ++t) {
        const T* kj = kh + static_cast<int64_t>(keys[t]) * D;
        for (int64_t e = 0; e < share; ++e) {
          const T* qi = in.q + ((b * H + h0 + e) * Lq + i) * D;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += widen(qi[d]) * widen(kj[d]);
          scores[static_cast<size_t>(e * n + t)] = in.scale * dot;
        }
      }
      // Softmax per head (stable: the row maximum first), weights m_t for counted repeats.
      acc.assign(static_cast<size_t>(share * Dv), 0.0f);
      for (int64_t e = 0; e < share; ++e) {
        float* se = scores.data() + e * n;
        float* lse = out.lse + (b * H + h0 + e) * Lq + i;
        if (n == 0) {
          *lse = neg_inf;
          inv[e] = 0.0f;
          continue;
        }
        float m = se[0];
        for (int64_t t = 1; t < n; ++t) m = std::max(m, se[t]);
        const float* w = weights.data();
#pragma omp simd
        for (int64_t t = 0; t < n; ++t) se[t] = w[t] * exp_nonpositive(se[t] - m);
        float l = 0.0f;  // summed in key order: the same on every thread
        for (int64_t t = 0; t < n; ++t) l += se[t];
        *lse = m + std::log(l);
        inv[e] = 1.0f / l;
      }
      // P·V: each value row once, into every head's accumulator.
      for (int64_t t = 0; t < n; ++t) {
        const T* vj = vh + static_cast<int64_t>(keys[t]) * Dv;
        for (int64_t e = 0; e < share; ++e) {
          const float p = scores[static_cast<size_t>(e * n + t)];
          float* a = acc.data() + e * Dv;
#pragma omp simd
          for (int64_t d = 0; d < Dv; ++d) a[d] += p * widen(vj[d]);
        }
      }
      for (int64_t e = 0; e < share; ++e) {
        float* o = out.o + ((b * H + h0 + e) * Lq + i) * Dv;
        for (int64_t d = 0; d < Dv; ++d) o[d] = acc[static_cast<size_t>(e * Dv + d)] * inv[e];
      }
    }
  }
}

}  // namespace

void k08_selected_gather(const Inputs& in, const Outputs& out) {
  selected_gather(in, out, "cpu_k08_selected_gather");
}
void k08_selected_gather_bf16(const InputsBf16& in, const Outputs& out) {
  selected_gather(in, out, "cpu_k08_selected_gather_bf16");
}

SPARSEATTN_ISA_END
