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
// Measured: docs/benchmarks.md, "Decode against a KV cache: bytes per second" (2026-12-01,
// Zen 5, avx512 build, 2 threads on a shared machine): 27% of the probed copy bandwidth at
// L_cache 32768, H_q 32, H_kv 8, head_dim 128, bf16; paged (page_size 256) / contiguous 1.07.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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
template <class T>
inline void prefetch(const T* p, int64_t count) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t x = 0; x < count * static_cast<int64_t>(sizeof(T)); x += 64) __builtin_prefetch(c + x);
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

// Σ_x a[x]·b[x] over the whole vectors of d (x < d − d mod kLanes), as a vector of lane
// partial sums: the row_sums below reduce kLanes of them at once.
template <class T>
inline Vec dot_lanes(const float* a, const T* b, int64_t d) {
  Vec acc0 = splat(0.0f), acc1 = splat(0.0f);
  int64_t x = 0;
  for (; x + 2 * kLanes <= d; x += 2 * kLanes) {
    acc0 = loadv(a + x) * load_elems(b + x) + acc0;
    acc1 = loadv(a + x + kLanes) * load_elems(b + x + kLanes) + acc1;
  }
  if (x + kLanes <= d) acc0 = loadv(a + x) * load_elems(b + x) + acc0;
  return acc0 + acc1;
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
// `rows`: kLanes vectors of kLanes floats, one after the other.
inline Vec row_sums(const float* rows) {
  Vec v[kLanes];
  for (int j = 0; j < kLanes; ++j) v[j] = loadv(rows + j * kLanes);
  for (int j = 0; j < kLanes / 2; ++j) v[j] = pair_sum<1>(v[2 * j], v[2 * j + 1]);
  for (int j = 0; j < kLanes / 4; ++j) v[j] = pair_sum<2>(v[2 * j], v[2 * j + 1]);
  for (int j = 0; j < kLanes / 8; ++j) v[j] = pair_sum<4>(v[2 * j], v[2 * j + 1]);
#if defined(SPARSEATTN_ISA_AVX512)
  v[0] = pair_sum<8>(v[0], v[1]);
#endif
  return v[0];
}

// acc[0, dv) = alpha·acc + Σ_{c in cs} p[c]·v[c·dv …]: the accumulator in registers, four
// vectors of it at a time, the block's value rows from L1.
template <class T>
inline void scale_accumulate(float* acc, int64_t dv, float alpha, const float* p, const T* v,
                             const int64_t* cs, int64_t ncs) {
  int64_t x = 0;
  for (; x + 4 * kLanes <= dv; x += 4 * kLanes) {
    Vec a0 = loadv(acc + x) * alpha, a1 = loadv(acc + x + kLanes) * alpha;
    Vec a2 = loadv(acc + x + 2 * kLanes) * alpha, a3 = loadv(acc + x + 3 * kLanes) * alpha;
    for (int64_t t = 0; t < ncs; ++t) {
      const T* vr = v + cs[t] * dv + x;
      const Vec pc = splat(p[cs[t]]);
      a0 = pc * load_elems(vr) + a0;
      a1 = pc * load_elems(vr + kLanes) + a1;
      a2 = pc * load_elems(vr + 2 * kLanes) + a2;
      a3 = pc * load_elems(vr + 3 * kLanes) + a3;
    }
    storev(acc + x, a0);
    storev(acc + x + kLanes, a1);
    storev(acc + x + 2 * kLanes, a2);
    storev(acc + x + 3 * kLanes, a3);
  }
  for (; x + kLanes <= dv; x += kLanes) {
    Vec a0 = loadv(acc + x) * alpha;
    for (int64_t t = 0; t < ncs; ++t) a0 = splat(p[cs[t]]) * load_elems(v + cs[t] * dv + x) + a0;
    storev(acc + x, a0);
  }
  for (; x < dv; ++x) {
    float a = acc[x] * alpha;
    for (int64_t t = 0; t < ncs; ++t) a += p[cs[t]] * elem(v[cs[t] * dv + x]);
    acc[x] = a;
  }
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
    std::vector<float> qs(static_cast<size_t>(R * d));
    std::vector<float> sc(static_cast<size_t>(g * sw)), pr(static_cast<size_t>(sw));
    std::vector<float> qbuf(static_cast<size_t>(d));
    std::vector<int64_t> cs(static_cast<size_t>(kBlk));
    // dot_lanes of g heads × kLanes keys (floats: std::vector does not align Vec)
    std::vector<float> lanes(static_cast<size_t>(g * kLanes * kLanes));
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
      // The item's query rows, scale folded in (scale·q, float32, as the other kernels).
      for (int64_t hh = 0; hh < g; ++hh)
        for (int64_t i = 0; i < Lq; ++i) {
          const int64_t h = kvh * g + hh;
          const float* q = as_float(in.q + ((b * Hq + h) * Lq + i) * d, d, qbuf.data());
          float* dst = qs.data() + (hh * Lq + i) * d;
          for (int64_t x = 0; x < d; ++x) dst[x] = q[x] * in.scale;
        }
      for (int64_t j = j0; j < j1;) {
        int64_t run = 0;
        const int64_t row = key_at(b, kvh, j, run);
        const int64_t nc = std::min({kBlk, j1 - j, run});
        const T* kb = in.k + row * d;
        const T* vb = in.v + row * dv;
        if (j + nc < j1) {  // the next block's K and V on their way while this one computes
          int64_t run2 = 0;
          const int64_t row2 = key_at(b, kvh, j + nc, run2);
          const int64_t nc2 = std::min({kBlk, j1 - j - nc, run2});
          prefetch(in.k + row2 * d, nc2 * d);
          prefetch(in.v + row2 * dv, nc2 * dv);
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
          // Scores of the g heads of query i, K row read once for all of them: scale·<q, k>,
          // then softcap, then ALiBi (contract §2.8); disallowed columns stay −inf.
          std::fill(sc.begin(), sc.end(), kNegInfD);
          const int64_t p = i + e.n - Lq;
          const int64_t dvec = d / kLanes * kLanes;
          for (int64_t t0 = 0; t0 < ncs; t0 += kLanes) {
            const int64_t nt = std::min<int64_t>(kLanes, ncs - t0);
            for (int64_t u = 0; u < kLanes; ++u) {
              const T* kr = kb + cs[t0 + std::min(u, nt - 1)] * d;
              for (int64_t hh = 0; hh < g; ++hh)
                storev(lanes.data() + (hh * kLanes + u) * kLanes,
                       u < nt ? dot_lanes(qs.data() + (hh * Lq + i) * d, kr, d) : splat(0.0f));
            }
            for (int64_t hh = 0; hh < g; ++hh) {
              float sums[kLanes];
              storev(sums, row_sums(lanes.data() + hh * kLanes * kLanes));
              const float* q = qs.data() + (hh * Lq + i) * d;
              for (int64_t u = 0; u < nt; ++u) {
                const T* kr = kb + cs[t0 + u] * d;
                float x = sums[u];
                for (int64_t c = dvec; c < d; ++c) x += q[c] * elem(kr[c]);  // the tail of d
                sc[hh * sw + cs[t0 + u]] = x;
              }
            }
          }
          for (int64_t hh = 0; hh < g; ++hh) {
            const int64_t h = kvh * g + hh, rr = hh * Lq + i;
            float* srow = sc.data() + hh * sw;
            if (in.mods.softcap > 0.0f) {
              const float c = in.mods.softcap;
              for (int64_t t = 0; t < ncs; ++t) srow[cs[t]] = c * std::tanh(srow[cs[t]] / c);
            }
            if (in.mods.slopes != nullptr) {
              const float a = in.mods.slopes[b * in.mods.slopes_batch_stride + h];
              for (int64_t t = 0; t < ncs; ++t) {
                const int64_t key = j + cs[t];
                srow[cs[t]] -= a * static_cast<float>(p > key ? p - key : key - p);
              }
            }
            // Online softmax (contract §2.1): m_new, α = exp(m − m_new), P = exp(s − m_new).
            float mloc = kNegInfD;
            for (int64_t t = 0; t < ncs; ++t) mloc = std::max(mloc, srow[cs[t]]);
            const float m_new = std::max(m[rr], mloc);
            const float alpha = m[rr] == kNegInfD ? 0.0f : std::exp(m[rr] - m_new);
            Vec sum = splat(0.0f);
            for (int64_t c = 0; c < sw; c += kLanes) {
              const Vec pv = vexp(loadv(srow + c) - m_new);
              storev(pr.data() + c, pv);
              sum = sum + pv;
            }
            l[rr] = alpha * l[rr] + hsum(sum);
            m[rr] = m_new;
            scale_accumulate(acc + rr * dv, dv, alpha, pr.data(), vb, cs.data(), ncs);
          }
        }
        j += nc;
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
