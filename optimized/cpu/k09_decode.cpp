// k09 — decoding against a KV cache, float32 and bf16 inputs (contract §2.11–§2.12).
//
// Contract: matches a1_dense_masked through the layout walk (api/layout_walk.h) within
// kTolFloat32 (atol 2e-5, rtol 2e-4, core/numerics.h); the bf16 twin within kTolBfloat16
// on the bf16-rounded inputs. Serves `dense`, `window` (any dilation, left/right) and
// `chunked`, causal or not, no key padding. Reads the cache [B, H_kv, L_cache, d] or the
// page pools through the block table in place (registry features kKvCache, kPaged), or
// plain [B, H_kv, L_k, d] inputs. Grouped heads, softcap, ALiBi, sinks (kModern).
// Bit-identical for any OpenMP thread count.
//
// Why a kernel of its own: with L_q = 1 a FlashTile of 64 query rows is 1/64 used, and the
// work is reading K and V once (memory-bound: 2·d·bytes per key against 4·d·g FLOPs). So an
// item owns one kv head's keys of one split and all g·L_q rows that read them, and the key
// axis is cut into fixed splits that any thread may take (decode.h: split-K, merged by
// lse). Each row's keys are one arithmetic progression lo, lo + stride, …, <= hi (DecodeRowKeys),
// so a block of keys needs no per-key pattern lookup: a row computes scores only on its own
// progression's keys inside the block and skips blocks it does not reach.
// The arithmetic per key (since 2026-12-02): the g heads go through a block in groups of
// four, so one widened K row serves four dot products and one widened V row four
// accumulations (the accumulators of four heads × four vectors stay in registers across the
// block's keys); the scores take two keys per pass (2·NH independent FMA chains); bf16 rows are
// widened a pair of vectors per load (even and odd elements, load_pair); α of the group in
// one vector exp; the row maxima by vector max over the −inf-padded score rows; the K and V
// rows of the block two ahead asked for into L2 a row at a time while the block computes.
// Measured: docs/benchmarks.md, "Decode against a KV cache: bytes per second" (2026-12-02,
// Intel Xeon VM with AVX-512, avx512 build, 2 threads on a shared machine, L_cache 32768,
// H_q 32, H_kv 8, head_dim 128, bf16): 14.5 GB/s = 56% of the probed copy bandwidth with
// 4 KiB pages (was 39%), 18.4 GB/s = 66% with the cache in huge pages (bench_decode
// --huge-pages; was 43%); 18.2 / 14.4 ms of CPU per call (was 25.9 / 21.7); paged
// (page_size 256) / contiguous 0.97–1.04. History: optimized/cpu/TUNING.md.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/bfloat16.h"
#include "optimized/cpu/decode.h"
#include "optimized/cpu/simd.h"
#include "pattern/decode_row.h"
#include "pattern/pattern.h"

SPARSEATTN_ISA_BEGIN

namespace {

// Each row's keys are one progression (DecodeRowKeys): the rule of pattern/decode_row.h,
// shared with the CUDA decode and packed-batch kernels (contract §2.10–§2.12).

inline constexpr int64_t kBlk = 64;  // keys per block (a block never crosses a page)
inline constexpr float kNegInfD = -std::numeric_limits<float>::infinity();

// count elements as float32: in place for float, widened into `buf` for bf16 (bits << 16,
// exact). For the item's q rows; K and V are widened in registers (load_elems).
inline const float* as_float(const float* src, int64_t count, float* /*buf*/) {
  (void)count;
  return src;
}
inline const float* as_float(const uint16_t* src, int64_t count, float* buf) {
  for (int64_t x = 0; x < count; ++x) {
    const uint32_t u = static_cast<uint32_t>(src[x]) << 16;
    std::memcpy(buf + x, &u, sizeof u);
  }
  return buf;
}

// Asks for the cache lines of count elements from p (a block the next step reads): decode
// computes little per byte, so the memory should not wait for the arithmetic of a block.
// The rows of a block kPrefetchBlocks ahead (K rows krow bytes each, V rows vrow bytes),
// asked for into L2 a row at a time as this block's first rows are computed: spread over
// the arithmetic, the requests keep the memory busy while it runs, where one burst of
// 512 line requests at the start of a block waited on the core's few miss buffers and the
// arithmetic with them (optimized/cpu/TUNING.md, k09).
struct NextRows {
  const char* k = nullptr;
  const char* v = nullptr;
  int64_t krow = 0, vrow = 0, n = 0;  // bytes per K row, per V row; rows
  int64_t k_done = 0, v_done = 0;     // rows asked for so far
};
inline constexpr int kPrefetchBlocks = 2;
inline void prefetch_rows(const char* p, int64_t bytes) {
  for (int64_t x = 0; x < bytes; x += 64) __builtin_prefetch(p + x, 0, 2);
}

// kLanes elements from p as float32: a plain load, or bf16 bits widened (<< 16, exact) in
// registers — K and V are read where they lie, never copied into a float buffer.
inline Vec load_elems(const float* p) { return loadv(p); }
inline Vec load_elems(const uint16_t* p) {
  // vpmovzxwd from memory, then a shift: GCC splits __builtin_convertvector into halves.
  // The masked forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized (as in simd.h).
#if defined(SPARSEATTN_ISA_AVX512)
  const __m512i w = _mm512_maskz_cvtepu16_epi32(
      0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return reinterpret_cast<Vec>(_mm512_maskz_slli_epi32(0xFFFF, w, 16));
#else
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return reinterpret_cast<Vec>(_mm256_slli_epi32(w, 16));
#endif
}
inline float elem(float x) { return x; }
inline float elem(uint16_t h) { return bfloat16_to_float(h); }

// The bf16 rows are widened a pair of vectors at a time: one load of 2·kLanes elements as
// kLanes 32-bit words holds element 2t in the low and 2t + 1 in the high half of word t, so
// `word << 16` is the even elements and `word & 0xFFFF0000` the odd ones, exactly — one
// integer operation per kLanes floats where vpmovzxwd + shift take two (the FMA ports are
// the ones both use). The d axis inside each pair is then read in that order (evens, then
// odds): q is stored in it (pair_order) and the P·V accumulator is kept in it, put back in
// element order once per item (from_pair_order). float32 rows are read in order (two plain
// loads), so for them the order is the identity.
inline constexpr int64_t kPair = 2 * kLanes;
template <class T>
inline constexpr bool kPairOrder = sizeof(T) == 2;

inline void load_pair(const float* p, Vec& even, Vec& odd) {
  even = loadv(p);
  odd = loadv(p + kLanes);
}
inline void load_pair(const uint16_t* p, Vec& even, Vec& odd) {
  using VI = Simd<kLanes>::i;
  VI w;
  std::memcpy(&w, p, sizeof w);
  const VI lo = w << 16, hi = w & static_cast<int32_t>(0xFFFF0000u);
  std::memcpy(&even, &lo, sizeof even);
  std::memcpy(&odd, &hi, sizeof odd);
}
// Position x (< the whole pairs of the row) of the pair order holds element natural_of(x).
inline int64_t natural_of(int64_t x) {
  const int64_t base = x / kPair * kPair, t = x - base;
  return base + (t < kLanes ? 2 * t : 2 * (t - kLanes) + 1);
}

// Lane vectors of NH heads' dot products with two key rows k0, k1 (q rows qstride apart,
// into lanes[h·kLanes + u] and lanes[h·kLanes + u + 1];
// in pair order up to d / kPair·kPair, then in element order): one widening of a key row
// serves NH heads, each q vector both keys (GCC folds it into both FMAs as a memory
// operand; holding it in a register measured the same, TUNING.md), 2·NH FMA chains. The lanes
// are summed later (row_sums); the d tail past whole vectors is added in scalar there.
template <int NH, class T>
inline void dot2_lanes(const float* q, int64_t qstride, const T* k0, const T* k1, int64_t d,
                       Vec* lanes, int u) {
  Vec a0[NH], a1[NH];
  for (int h = 0; h < NH; ++h) a0[h] = a1[h] = splat(0.0f);
  const int64_t dpair = d / kPair * kPair;
  int64_t x = 0;
  for (; x < dpair; x += kPair) {
    Vec k0e, k0o, k1e, k1o;
    load_pair(k0 + x, k0e, k0o);
    load_pair(k1 + x, k1e, k1o);
    for (int h = 0; h < NH; ++h) {
      const Vec qe = loadv(q + h * qstride + x), qo = loadv(q + h * qstride + x + kLanes);
      a0[h] = qe * k0e + a0[h];
      a1[h] = qe * k1e + a1[h];
      a0[h] = qo * k0o + a0[h];
      a1[h] = qo * k1o + a1[h];
    }
  }
  if (x + kLanes <= d) {
    const Vec k0v = load_elems(k0 + x), k1v = load_elems(k1 + x);
    for (int h = 0; h < NH; ++h) {
      const Vec qv = loadv(q + h * qstride + x);
      a0[h] = qv * k0v + a0[h];
      a1[h] = qv * k1v + a1[h];
    }
  }
  for (int h = 0; h < NH; ++h) {
    lanes[h * kLanes + u] = a0[h];
    lanes[h * kLanes + u + 1] = a1[h];
  }
}

// Lane i of the result: u's or w's lanes summed in pairs S apart (one level of row_sums).
template <int S>
inline Vec pair_sum(Vec u, Vec w) {
  using VI = Simd<kLanes>::i;
  VI lo, hi;
  for (int i = 0; i < kLanes; ++i) {
    const int blk = i / (2 * S) * (2 * S), off = i % (2 * S);
    lo[i] = off < S ? blk + off : kLanes + blk + off - S;
    hi[i] = off < S ? blk + off + S : kLanes + blk + off;
  }
  return __builtin_shuffle(u, w, lo) + __builtin_shuffle(u, w, hi);
}

// r[i] = the sum of the lanes of v[i], for kLanes vectors at once (a transpose-and-add
// tree: log2(kLanes) levels, kLanes − 1 pair sums in all, instead of one horizontal sum
// per vector). A fixed order: every row's sum is the same whichever thread computes it.
inline Vec row_sums(const Vec* rows) {
  Vec v[kLanes];
  for (int j = 0; j < kLanes / 2; ++j) v[j] = pair_sum<1>(rows[2 * j], rows[2 * j + 1]);
  for (int j = 0; j < kLanes / 4; ++j) v[j] = pair_sum<2>(v[2 * j], v[2 * j + 1]);
  for (int j = 0; j < kLanes / 8; ++j) v[j] = pair_sum<4>(v[2 * j], v[2 * j + 1]);
#if defined(SPARSEATTN_ISA_AVX512)
  v[0] = pair_sum<8>(v[0], v[1]);
#endif
  return v[0];
}

// acc_h[0, dv) = alpha_h·acc_h + Σ_{c in cs} p_h[c]·v[c·dv …] for NH heads at once (acc rows
// astride apart, p rows pstride apart): the accumulators of NH heads × four vectors in
// registers across the block's keys, so one widened value row feeds NH FMAs; the value
// rows from L1. Pair order up to dv / kPair·kPair (kPairOrder<T>), then element order.
template <int NH, class T>
inline void scale_accumulate(float* acc, int64_t astride, int64_t dv, const float* alpha,
                             const float* p, int64_t pstride, const T* v, const int64_t* cs,
                             int64_t ncs, NextRows* nx) {
  const int64_t dvpair = dv / kPair * kPair;
  int64_t x = 0;
  for (; x + 2 * kPair <= dvpair; x += 2 * kPair) {
    Vec a[NH][4];
    for (int h = 0; h < NH; ++h)
      for (int r = 0; r < 4; ++r) a[h][r] = loadv(acc + h * astride + x + r * kLanes) * alpha[h];
    for (int64_t t = 0; t < ncs; ++t) {
      if (nx != nullptr && x == 0 && nx->v_done < nx->n) {
        prefetch_rows(nx->v + nx->v_done * nx->vrow, nx->vrow);
        ++nx->v_done;
      }
      const T* vr = v + cs[t] * dv + x;
      Vec v0, v1, v2, v3;
      load_pair(vr, v0, v1);
      load_pair(vr + kPair, v2, v3);
      for (int h = 0; h < NH; ++h) {
        const Vec pc = splat(p[h * pstride + cs[t]]);
        a[h][0] = pc * v0 + a[h][0];
        a[h][1] = pc * v1 + a[h][1];
        a[h][2] = pc * v2 + a[h][2];
        a[h][3] = pc * v3 + a[h][3];
      }
    }
    for (int h = 0; h < NH; ++h)
      for (int r = 0; r < 4; ++r) storev(acc + h * astride + x + r * kLanes, a[h][r]);
  }
  if (x < dvpair) {  // one pair left
    Vec a[NH][2];
    for (int h = 0; h < NH; ++h)
      for (int r = 0; r < 2; ++r) a[h][r] = loadv(acc + h * astride + x + r * kLanes) * alpha[h];
    for (int64_t t = 0; t < ncs; ++t) {
      Vec v0, v1;
      load_pair(v + cs[t] * dv + x, v0, v1);
      for (int h = 0; h < NH; ++h) {
        const Vec pc = splat(p[h * pstride + cs[t]]);
        a[h][0] = pc * v0 + a[h][0];
        a[h][1] = pc * v1 + a[h][1];
      }
    }
    for (int h = 0; h < NH; ++h)
      for (int r = 0; r < 2; ++r) storev(acc + h * astride + x + r * kLanes, a[h][r]);
    x += kPair;
  }
  for (; x + kLanes <= dv; x += kLanes) {
    Vec a[NH];
    for (int h = 0; h < NH; ++h) a[h] = loadv(acc + h * astride + x) * alpha[h];
    for (int64_t t = 0; t < ncs; ++t) {
      const Vec vv = load_elems(v + cs[t] * dv + x);
      for (int h = 0; h < NH; ++h) a[h] = splat(p[h * pstride + cs[t]]) * vv + a[h];
    }
    for (int h = 0; h < NH; ++h) storev(acc + h * astride + x, a[h]);
  }
  for (; x < dv; ++x)
    for (int h = 0; h < NH; ++h) {
      float a = acc[h * astride + x] * alpha[h];
      for (int64_t t = 0; t < ncs; ++t) a += p[h * pstride + cs[t]] * elem(v[cs[t] * dv + x]);
      acc[h * astride + x] = a;
    }
}

// count floats from a buffer aligned to 64 bytes (a whole cache line per zmm load).
inline float* aligned_floats(std::vector<float>& buf, int64_t count) {
  buf.assign(static_cast<size_t>(count + 16), 0.0f);
  const uintptr_t a = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + ((64 - a % 64) % 64) / sizeof(float);
}

// What one element needs: its key count, its rows' progressions and their union span.
struct Element {
  int64_t n = 0;
  std::vector<DecodeRowKeys> rows;  // [L_q]
  int64_t span_lo = 0, span_hi = -1;
  int64_t splits = 0;
};

template <class T>
void run_decode(const DecodeInputsT<T>& in, const Outputs& out) {
  const AttentionShape& s = in.shape;
  const PatternSpec& spec = in.pattern->spec;
  const int64_t B = s.batch, Hq = s.num_heads, Hkv = s.num_kv_heads, g = s.group();
  const int64_t Lq = s.seq_len_q, d = s.head_dim, dv = s.head_dim_v;
  const int64_t R = g * Lq;  // rows of an item: query head hh of the group, query i: hh·L_q + i
  int64_t S = in.split_keys > 0 ? in.split_keys : kDecodeSplitKeys;
  const KvCache* cache = in.cache;
  const bool paged = cache != nullptr && cache->paged();

  // Per element: its rows' keys (contract §2.11: the spec's for (L_q, n_b)), their union
  // and the splits of it. Items: (b, kv head, split), element-major.
  std::vector<Element> el(static_cast<size_t>(B));
  std::vector<int64_t> item_start(static_cast<size_t>(B + 1), 0);
  for (int64_t b = 0; b < B; ++b) {
    Element& e = el[b];
    e.n = cache != nullptr ? cache->seq_len_k(b) : s.seq_len_k;
    e.rows.assign(static_cast<size_t>(Lq), DecodeRowKeys{});
    if (e.n == 0) continue;
    const BandParams band = spec.kind == PatternKind::window ? band_of(spec, Lq, e.n)
                                                              : BandParams{};
    e.span_lo = e.n;
    for (int64_t i = 0; i < Lq; ++i) {
      DecodeRowKeys& r = e.rows[i];
      r = decode_row_keys(spec, band, Lq, e.n, i);
      if (r.lo > r.hi) continue;
      e.span_lo = std::min(e.span_lo, r.lo);
      e.span_hi = std::max(e.span_hi, r.hi);
    }
  }
  // The partials hold R·(dv + 2) floats per item. Long query blocks (a plain problem with
  // L_q in the thousands: correct, if not the target) would need gigabytes at 256 keys per
  // split, so the split grows until they fit kDecodePartialBudget floats — a function of
  // the problem only, never of the thread count.
  auto total_splits = [&](int64_t keys) {
    int64_t t = 0;
    for (const Element& e : el)
      if (e.span_hi >= e.span_lo) t += Hkv * ((e.span_hi - e.span_lo + keys) / keys);
    return t;
  };
  if (in.split_keys <= 0) {
    const int64_t per_item = R * (dv + 2);
    while (total_splits(S) * per_item > kDecodePartialBudget && total_splits(S) > B * Hkv) S *= 2;
  }
  for (int64_t b = 0; b < B; ++b) {
    Element& e = el[b];
    if (e.span_hi >= e.span_lo) e.splits = (e.span_hi - e.span_lo + S) / S;
    item_start[b + 1] = item_start[b] + Hkv * e.splits;
  }
  const int64_t num_items = item_start[B];
  const int64_t part = R * (dv + 2);  // per item: m [R], l [R], acc [R, dv]
  std::vector<float> partials(static_cast<size_t>(num_items * part));

  const int64_t kv_rows = paged ? cache->page_size : s.seq_len_k;  // rows per (unit, kv head)
  // K (V) row of logical key j of element b, kv head kvh, and how many keys follow it
  // contiguously (to the end of its page).
  auto key_at = [&](int64_t b, int64_t kvh, int64_t j, int64_t& run) -> int64_t {
    if (!paged) {
      run = std::numeric_limits<int64_t>::max();
      return (b * Hkv + kvh) * kv_rows + j;
    }
    const int64_t slot = j % kv_rows;
    run = kv_rows - slot;
    return (cache->page(b, j) * Hkv + kvh) * kv_rows + slot;
  };

#pragma omp parallel
  {
    const int64_t sw = (kBlk + kLanes - 1) / kLanes * kLanes;  // a score row, whole vectors
    const int64_t dvec = d / kLanes * kLanes;  // d past it: the scalar tail of the scores
    const int64_t dpair = d / kPair * kPair, dvpair = dv / kPair * kPair;
    std::vector<float> qs_buf, sc_buf, pr_buf;
    float* qs = aligned_floats(qs_buf, R * d);
    float* sc = aligned_floats(sc_buf, g * sw);  // scores of the g heads of one query
    float* pr = aligned_floats(pr_buf, g * sw);  // their exp(s − m_new)
    std::vector<float> qbuf(static_cast<size_t>(d)), row_buf(static_cast<size_t>(dv));
    std::vector<int64_t> cs(static_cast<size_t>(kBlk));
    int64_t q_of = -1;  // the (element, kv head) whose rows qs holds: b·H_kv + kvh

    // One block's work for query i and NH heads hh0 … hh0 + NH − 1 of the kv head: scores
    // (scale·<q, k>, then softcap, then ALiBi, contract §2.8; disallowed columns −inf), the
    // online softmax step (contract §2.1: m_new, α = exp(m − m_new), P = exp(s − m_new)) and
    // P·V, the block's K and V rows read from L1 once per NH heads.
    auto heads_block = [&](auto nh_tag, const T* kb, const T* vb, int64_t j, int64_t i, int64_t p,
                           int64_t hh0, int64_t b, int64_t kvh, float* m, float* l, float* acc,
                           int64_t ncs, NextRows* nx) {
      constexpr int NH = decltype(nh_tag)::value;
      const int64_t rr0 = hh0 * Lq + i;  // row of head hh0 + h: rr0 + h·L_q
      const float* q = qs + rr0 * d;
      float* srow0 = sc + hh0 * sw;
      std::fill(srow0, srow0 + NH * sw, kNegInfD);
      Vec lanes[NH * kLanes];  // [head][key of the group]
      for (int64_t t0 = 0; t0 < ncs; t0 += kLanes) {
        const int nt = static_cast<int>(std::min<int64_t>(kLanes, ncs - t0));
        for (int u = 0; u < kLanes; u += 2) {
          if (u >= nt) {
            for (int h = 0; h < NH; ++h) lanes[h * kLanes + u] = lanes[h * kLanes + u + 1] = splat(0.0f);
            continue;
          }
          // An odd last key pairs with itself; its twin's lanes are never read.
          const T* k0 = kb + cs[t0 + u] * d;
          const T* k1 = kb + cs[t0 + std::min(u + 1, nt - 1)] * d;
          dot2_lanes<NH>(q, Lq * d, k0, k1, d, lanes, u);
          for (int r = 0; r < 2 && nx != nullptr && nx->k_done < nx->n; ++r, ++nx->k_done)
            prefetch_rows(nx->k + nx->k_done * nx->krow, nx->krow);
        }
        for (int h = 0; h < NH; ++h) {
          float sums[kLanes];
          storev(sums, row_sums(lanes + h * kLanes));
          const float* qh = q + h * Lq * d;
          float* srow = srow0 + h * sw;
          for (int u = 0; u < nt; ++u) {
            const T* kr = kb + cs[t0 + u] * d;
            float x = sums[u];
            for (int64_t c = dvec; c < d; ++c) x += qh[c] * elem(kr[c]);  // the tail of d
            srow[cs[t0 + u]] = x;
          }
        }
      }
      float m_new[NH], alpha[NH];
      alignas(64) float diff[kLanes];
      std::fill(diff, diff + kLanes, kNegInfD);
      for (int h = 0; h < NH; ++h) {
        const int64_t hq = kvh * g + hh0 + h, rr = rr0 + h * Lq;
        float* srow = srow0 + h * sw;
        if (in.mods.softcap > 0.0f) {
          const float c = in.mods.softcap;
          for (int64_t t = 0; t < ncs; ++t) srow[cs[t]] = c * std::tanh(srow[cs[t]] / c);
        }
        if (in.mods.slopes != nullptr) {
          const float a = in.mods.slopes[b * in.mods.slopes_batch_stride + hq];
          for (int64_t t = 0; t < ncs; ++t) {
            const int64_t key = j + cs[t];
            srow[cs[t]] -= a * static_cast<float>(p > key ? p - key : key - p);
          }
        }
        Vec mx = loadv(srow);  // −inf outside the row's keys, so the max is theirs
        for (int64_t c = kLanes; c < sw; c += kLanes) {
          const Vec y = loadv(srow + c);
          mx = y > mx ? y : mx;
        }
        m_new[h] = std::max(m[rr], hmax(mx));
        if (m[rr] != kNegInfD) diff[h] = m[rr] - m_new[h];  // else α = exp(−inf) = 0
      }
      float alpha_lanes[kLanes];
      storev(alpha_lanes, vexp(loadv(diff)));  // the NH heads' α in one exp
      for (int h = 0; h < NH; ++h) {
        const int64_t rr = rr0 + h * Lq;
        alpha[h] = alpha_lanes[h];
        const float* srow = srow0 + h * sw;
        Vec sum = splat(0.0f);
        for (int64_t c = 0; c < sw; c += kLanes) {
          const Vec pv = vexp(loadv(srow + c) - m_new[h]);
          storev(pr + (hh0 + h) * sw + c, pv);
          sum = sum + pv;
        }
        l[rr] = alpha[h] * l[rr] + hsum(sum);
        m[rr] = m_new[h];
      }
      scale_accumulate<NH>(acc + rr0 * dv, Lq * dv, dv, alpha, pr + hh0 * sw, sw, vb, cs.data(), ncs, nx);
    };

#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < num_items; ++item) {
      const int64_t b = std::upper_bound(item_start.begin(), item_start.end(), item) -
                        item_start.begin() - 1;
      const Element& e = el[b];
      const int64_t local = item - item_start[b];
      const int64_t kvh = local / e.splits, split = local % e.splits;
      const int64_t j0 = e.span_lo + split * S, j1 = std::min(j0 + S, e.span_hi + 1);
      float* m = partials.data() + item * part;
      float* l = m + R;
      float* acc = l + R;
      std::fill(m, m + R, kNegInfD);
      std::fill(l, l + R, 0.0f);
      std::fill(acc, acc + R * dv, 0.0f);
      // The item's query rows, scale folded in (scale·q, float32, as the other kernels),
      // in the pair order of the key rows (dot2_lanes); kept while this thread's items
      // stay on one (element, kv head), as consecutive splits usually do.
      if (q_of != b * Hkv + kvh) {
        q_of = b * Hkv + kvh;
        for (int64_t hh = 0; hh < g; ++hh)
          for (int64_t i = 0; i < Lq; ++i) {
            const int64_t h = kvh * g + hh;
            const float* q = as_float(in.q + ((b * Hq + h) * Lq + i) * d, d, qbuf.data());
            float* dst = qs + (hh * Lq + i) * d;
            for (int64_t x = 0; x < d; ++x)
              dst[x] = q[kPairOrder<T> && x < dpair ? natural_of(x) : x] * in.scale;
          }
      }
      for (int64_t j = j0; j < j1;) {
        int64_t run = 0;
        const int64_t row = key_at(b, kvh, j, run);
        const int64_t nc = std::min({kBlk, j1 - j, run});
        const T* kb = in.k + row * d;
        const T* vb = in.v + row * dv;
        // A later block's K and V rows, asked for a row at a time while this block's first
        // rows compute (heads_block), the rest after it.
        NextRows next;
        NextRows* nx = nullptr;
        int64_t jn = j + nc;  // the first key of the block kPrefetchBlocks ahead
        for (int step = 1; step < kPrefetchBlocks && jn < j1; ++step) {
          int64_t run2 = 0;
          key_at(b, kvh, jn, run2);
          jn += std::min({kBlk, j1 - jn, run2});
        }
        if (jn < j1) {
          int64_t run2 = 0;
          const int64_t row2 = key_at(b, kvh, jn, run2);
          next.n = std::min({kBlk, j1 - jn, run2});
          next.k = reinterpret_cast<const char*>(in.k + row2 * d);
          next.v = reinterpret_cast<const char*>(in.v + row2 * dv);
          next.krow = d * static_cast<int64_t>(sizeof(T));
          next.vrow = dv * static_cast<int64_t>(sizeof(T));
          nx = &next;
        }
        for (int64_t i = 0; i < Lq; ++i) {
          // Row i's keys in [j, j + nc): its progression's first and last there.
          const DecodeRowKeys& r = e.rows[i];
          const int64_t lo = std::max(r.lo, j), hi = std::min(r.hi, j + nc - 1);
          if (lo > hi) continue;
          const int64_t first = r.lo + (lo - r.lo + r.stride - 1) / r.stride * r.stride;
          if (first > hi) continue;
          int64_t ncs = 0;
          for (int64_t key = first; key <= hi; key += r.stride) cs[ncs++] = key - j;
          const int64_t p = i + e.n - Lq;
          // The g heads in groups of 4, 2 and 1 (registers: 4 heads × 2 keys of scores,
          // 4 heads × 4 vectors of P·V).
          for (int64_t hh0 = 0; hh0 < g;) {
            if (g - hh0 >= 4) {
              heads_block(std::integral_constant<int, 4>{}, kb, vb, j, i, p, hh0, b, kvh, m, l, acc, ncs, nx);
              hh0 += 4;
            } else if (g - hh0 >= 2) {
              heads_block(std::integral_constant<int, 2>{}, kb, vb, j, i, p, hh0, b, kvh, m, l, acc, ncs, nx);
              hh0 += 2;
            } else {
              heads_block(std::integral_constant<int, 1>{}, kb, vb, j, i, p, hh0, b, kvh, m, l, acc, ncs, nx);
              hh0 += 1;
            }
            nx = nullptr;  // the first group's rows ask for the next block
          }
        }
        for (; next.k_done < next.n; ++next.k_done) prefetch_rows(next.k + next.k_done * next.krow, next.krow);
        for (; next.v_done < next.n; ++next.v_done) prefetch_rows(next.v + next.v_done * next.vrow, next.vrow);
        j += nc;
      }
      // The accumulator back in element order (the merge reads it so).
      if (kPairOrder<T>)
        for (int64_t rr = 0; rr < R; ++rr) {
          float* a = acc + rr * dv;
          std::copy(a, a + dvpair, row_buf.begin());
          for (int64_t x = 0; x < dvpair; ++x) a[natural_of(x)] = row_buf[x];
        }
    }

    // The merge (contract §2.9: the sink enters once, here): per row, the splits of its
    // element and kv head in order, weighted by exp(m_s − M) with M the largest m_s and σ_h.
    std::vector<float> o_row(static_cast<size_t>(dv));
#pragma omp for schedule(static)
    for (int64_t bhi = 0; bhi < B * Hq * Lq; ++bhi) {
      const int64_t b = bhi / (Hq * Lq), h = bhi / Lq % Hq, i = bhi % Lq;
      const int64_t kvh = h / g, rr = (h % g) * Lq + i;
      const Element& e = el[b];
      const float sink = in.mods.sinks != nullptr ? in.mods.sinks[h] : kNegInfD;
      float M = sink;
      for (int64_t sp = 0; sp < e.splits; ++sp)
        M = std::max(M, partials[(item_start[b] + kvh * e.splits + sp) * part + rr]);
      float* o = out.o + bhi * dv;
      if (M == kNegInfD) {  // no key and no sink (contract §2.3)
        std::fill(o, o + dv, 0.0f);
        out.lse[bhi] = kNegInfD;
        continue;
      }
      float L = sink == kNegInfD ? 0.0f : std::exp(sink - M);
      std::fill(o_row.begin(), o_row.end(), 0.0f);
      for (int64_t sp = 0; sp < e.splits; ++sp) {
        const float* base = partials.data() + (item_start[b] + kvh * e.splits + sp) * part;
        const float ms = base[rr];
        if (ms == kNegInfD) continue;  // the split holds none of this row's keys
        const float w = std::exp(ms - M);
        L += w * base[R + rr];
        const float* a = base + 2 * R + rr * dv;
        for (int64_t x = 0; x < dv; ++x) o_row[x] += w * a[x];
      }
      const float inv = 1.0f / L;
      for (int64_t x = 0; x < dv; ++x) o[x] = o_row[x] * inv;
      out.lse[bhi] = M + std::log(L);
    }
  }
}

}  // namespace

void k09_decode(const DecodeInputs& in, const Outputs& out) { run_decode(in, out); }
void k09_decode_bf16(const DecodeInputsBf16& in, const Outputs& out) { run_decode(in, out); }

SPARSEATTN_ISA_END
