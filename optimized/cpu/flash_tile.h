// FlashTile: the online-softmax engine every optimized CPU kernel (k01 … k06) drives.
//
// One FlashTile holds up to kBr query rows of one (batch, head) and consumes key chunks of
// up to kBc keys from a KeyPanel (panel.h), in the order the kernel chooses. Per chunk it
// computes S = (scale·Q) Kᵀ, lets the kernel mask S (set a disallowed score to -inf), then
// applies the FlashAttention update (Dao et al. 2022, Alg. 1, lines 9–12), per row r:
//     m_new = max(m, max_c S[r,c])        P = exp(S - m_new)
//     l     = exp(m - m_new)·l + Σ_c P    O = exp(m - m_new)·O + P V
// and finish() writes o = O / l and lse = m + log l. The n×n score matrix never exists:
// the engine holds kBr×kBc scores, kBr×head_dim_v accumulators and two floats per row.
//
// Fully masked rows (contract §2): while every score seen is -inf, m stays -inf, P is set to 0
// (never exp(-inf - -inf) = NaN), l stays 0, and finish() writes o = 0, lse = -inf.
//
// The attention of current models (contract §2.8–§2.9), in float32 (TileMods, begin()):
// the softcap c·tanh(s/c) (vtanh, a rational approximation within a few ulps) and the ALiBi
// bias −a·|p − j| act on a chunk's scaled scores right after S = Q Kᵀ and before the
// kernel's mask (ScorePipeline, one branch per row and chunk, none per score; a plain tile
// skips it); a sink σ is the initial running max of every row with l = 1 (exp(σ − σ)), so
// a row no chunk reaches finishes with O = 0, l = 1: o = 0, lse = σ. Grouped kv heads
// (§2.7) are the kernels' business: they hand the tile the panel of the right kv head.
//
// Determinism: a row's arithmetic depends only on the chunks the kernel feeds and their
// order, never on the thread or on the other rows of the tile; kernels feed a fixed order,
// so outputs are bit-identical for any OpenMP thread count.
//
// Micro-kernels: R query rows × kStep = 2·kLanes keys (S) and R rows × kStep value columns
// (P V), 2R vector accumulators, two key (value) vectors and one broadcast in registers.
//   avx2   (16 ymm): R = 6, kStep 16 — 12 accumulators + 3 = 15 of 16 registers;
//   avx512 (32 zmm): R = 8, kStep 32 — 16 accumulators + 3 = 19 of 32 registers.
// Both give ≥ 12 independent FMA chains (two FMA pipes × 4–5 cycles latency) and 2R FMAs
// per 2 vector loads + R broadcasts, so the loop is FMA-bound.
// The online softmax runs in three passes per chunk (the row maxima; α = exp(m - m_new) for
// all rows by vector; exp per row), O is rescaled inside P·V and l is kept per lane (summed
// once in finish). K is read in place when a chunk starts on a panel block, V where the
// panel says (panel.h); on avx512 exp uses vrndscaleps/vscalefps (simd.h).
// What bounds it: the softmax's vector operations per score (counted per build in
// docs/benchmarks.md, "What bounds a kernel: the note") against the 2·head_dim FMAs of QKᵀ
// and P·V, and the per-row, per-chunk reductions (row maximum, the update of m, l), which
// do not shrink with head_dim. A tile height chosen per head_dim is the next step.
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5, avx512
// build, 2 threads), row "dense head_dim 64, n 2048 / 4096 / 16384" (k01, this engine
// alone): 77% of the FMA peak per CPU-second at n = 4096. The tuning log, each change with
// its figure and the trials that lost: optimized/cpu/TUNING.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "optimized/cpu/panel.h"
#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN

inline constexpr int64_t kBr = 64;  // query rows per tile (the paper's B_r)
inline constexpr int64_t kBc = 64;  // keys per chunk (B_c); the S scratch is kBr × kBc
#if defined(SPARSEATTN_ISA_AVX512)
inline constexpr int kRowGroup = 8;  // R: query rows per micro-kernel call
#else
inline constexpr int kRowGroup = 6;
#endif
static_assert(kBc % kStep == 0, "a chunk is whole micro-kernel steps");
static_assert(kStep == 2 * kLanes, "a micro-kernel step is two vectors");
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The mask of a chunk with nothing to mask (interior tiles of dense, full layout tiles).
struct NoMask {
  void operator()(int64_t /*r*/, float* /*s*/) const {}
};

// The score modifiers of one tile (contract §2.8–§2.9), float32 even in the bf16 kernels
// (which round q, k, v only). A default TileMods is plain attention.
struct TileMods {
  float softcap = 0.0f;    // c > 0: s = c·tanh(s/c) on the scaled score; 0: no cap
  bool alibi = false;      // s -= slope·|p − j|
  float slope = 0.0f;      // a[b, h]
  float sink = kNegInf;    // σ_h: the running max starts at σ and the sum at 1; -inf: none
  int64_t q_pos = 0;        // position p of the tile's row 0 (contract §3.1)
  int64_t q_pos_step = 1;  // row r sits at q_pos + r·q_pos_step (k03's residue classes: d)
  // Rows that are not evenly spaced (k04's global rows): row r sits at q_pos + q_list[r].
  const int64_t* q_list = nullptr;
};

// The keys of a chunk: column c is key first + c·stride (ALiBi's j), or list[c] for c <
// count when a list is given (k04's panel of global keys).
struct ChunkKeys {
  int64_t first = 0, stride = 1;
  const int64_t* list = nullptr;
  int64_t count = 0;
};
// The default of the engines' step(): the panel holds every key in order, key u0 + c.
inline constexpr ChunkKeys kPanelOrder{-1, 0, nullptr, 0};
inline ChunkKeys resolve_keys(ChunkKeys keys, int64_t u0) {
  return keys.stride == 0 && keys.list == nullptr ? ChunkKeys{u0, 1, nullptr, 0} : keys;
}

// tanh(x) per lane: a [13/6] odd/even rational approximation on [-7.99881, 7.99881]
// (Eigen's float tanh), where tanh is 1 − 2e-7 at the clamp: |error| <= 3.3e-7 (relative
// too) against float64 tanh on [-20, 20] in steps of 1e-4 (checked once, 2026-12-01), so a
// cap c moves a score by at most c·3.3e-7; about 13 vector operations and one division.
template <class V>
inline V vtanh(V x) {
  const V lim = splat<V>(7.99881172180175781f);
  x = x > lim ? lim : x;
  x = x < -lim ? -lim : x;
  const V x2 = x * x;
  V p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  V q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}

// The score pipeline of contract §2.8 after the scale, applied to a row of scores by whole
// vectors: the softcap, then ALiBi. `unit` multiplies the scores as the engine keeps them
// (1, or log2(e) for an engine in base 2): c·tanh(s/c) and a·|p − j| scale with them.
// One branch per row and chunk (never per score); plain attention skips it entirely.
class ScorePipeline {
 public:
  ScorePipeline() = default;
  ScorePipeline(const TileMods& m, float unit)
      : cap_(m.softcap * unit),
        inv_cap_(m.softcap > 0.0f ? 1.0f / (m.softcap * unit) : 0.0f),
        slope_(m.slope * unit),
        alibi_(m.alibi),
        active_(m.softcap > 0.0f || m.alibi),
        q_pos_(m.q_pos),
        q_pos_step_(m.q_pos_step),
        q_list_(m.q_list) {
    for (int l = 0; l < kLanes; ++l) lanes_[l] = static_cast<float>(l);
  }

  bool active() const { return active_; }

  // s: row r's scores over `width` columns (a multiple of kLanes), column c = key
  // keys.first + c·keys.stride. Columns past the chunk's keys are overwritten with -inf
  // by the caller afterwards; the pattern's -inf comes after this (contract §2.8).
  void apply(int64_t r, float* s, int64_t width, ChunkKeys keys) const {
    if (cap_ > 0.0f) {
      const Vec c = splat(cap_), inv = splat(inv_cap_);
      for (int64_t x = 0; x < width; x += kLanes) storev(s + x, c * vtanh(loadv(s + x) * inv));
    }
    if (alibi_) {
      const int64_t p = q_pos_ + (q_list_ != nullptr ? q_list_[r] : r * q_pos_step_);
      if (keys.list != nullptr) {  // listed keys: one scalar per score (k04's globals)
        for (int64_t c = 0; c < keys.count; ++c) {
          const int64_t j = keys.list[c];
          s[c] -= slope_ * static_cast<float>(p > j ? p - j : j - p);
        }
        return;
      }
      // p − j at column x + lane: base − (x + lane)·stride, stepped by kLanes·stride per
      // vector; integers below 2^24, exact. |d| by clearing the sign bit.
      const float stride = static_cast<float>(keys.stride);
      Vec d = splat(static_cast<float>(p - keys.first)) - lanes_ * stride;
      const Vec step = splat(static_cast<float>(kLanes) * stride), a = splat(slope_);
      using VI = Simd<kLanes>::i;
      const VI magnitude = VI{} + 0x7fffffff;
      for (int64_t x = 0; x < width; x += kLanes, d -= step) {
        const Vec dist = reinterpret_cast<Vec>(reinterpret_cast<VI>(d) & magnitude);
        storev(s + x, loadv(s + x) - a * dist);
      }
    }
  }

 private:
  float cap_ = 0.0f, inv_cap_ = 0.0f, slope_ = 0.0f;
  bool alibi_ = false, active_ = false;
  int64_t q_pos_ = 0, q_pos_step_ = 1;
  const int64_t* q_list_ = nullptr;
  Vec lanes_{};  // 0, 1, …, kLanes − 1
};

namespace detail {

// An empty asm that claims to modify a and b: GCC must hold them in registers, instead of
// folding each use into an FMA memory operand — which turns the 2 loads per step into
// 2·R loads and makes the micro-kernel load-bound.
inline void pin_in_registers(Vec& a, Vec& b) { __asm__("" : "+v"(a), "+v"(b)); }

// s[r][c] = Σ_d q[r][d] · k[c][d] for R rows, c in [0, width), width a multiple of kStep.
// q is the R rows interleaved, q[d · R + r], so the R broadcasts of one d sit at constant
// offsets from one pointer (with rows at a head_dim stride, each needed its own index
// register, and GCC spilled them: a stack load per broadcast).
// kb is the chunk's keys in blocks of kStep:
// kb[(c / kStep) · head_dim · kStep + d · kStep + c % kStep].
template <int R>
inline void qk_rows(const float* q, int64_t head_dim, const float* kb, int64_t width, float* s) {
  for (int64_t c0 = 0; c0 < width; c0 += kStep) {
    const float* k = kb + c0 * head_dim;  // block c0 / kStep
    Vec acc[R][2] = {};
    for (int64_t d = 0; d < head_dim; ++d) {
      Vec k0 = loadv(k + d * kStep);
      Vec k1 = loadv(k + d * kStep + kLanes);
      pin_in_registers(k0, k1);
      for (int r = 0; r < R; ++r) {
        const float qv = q[d * R + r];
        acc[r][0] += qv * k0;
        acc[r][1] += qv * k1;
      }
    }
    for (int r = 0; r < R; ++r) {
      storev(s + r * kBc + c0, acc[r][0]);
      storev(s + r * kBc + c0 + kLanes, acc[r][1]);
    }
  }
}

// o[r][:] = α[r]·o[r][:] + Σ_{c < nc} p[r][c] · v[c][:] for R rows; ldv a multiple of kStep. The sum
// runs over c in increasing order for every row (fixed reduction order). vb is the chunk's
// values, column d of key c at vb[(d / kStep) · block_stride + c · row_stride + d % kStep]
// (panel.h: the panel's packed blocks, or the caller's V rows read in place).
template <int R>
inline void pv_rows(const float* p, int64_t nc, const float* vb, int64_t row_stride,
                    int64_t block_stride, int64_t ldv, const float* alpha, float* o) {
  for (int64_t d0 = 0; d0 < ldv; d0 += kStep) {
    const float* v = vb + d0 / kStep * block_stride;  // column block d0 / kStep
    Vec acc[R][2];
    for (int r = 0; r < R; ++r) {  // the online softmax's rescale of O by α
      acc[r][0] = loadv(o + r * ldv + d0) * alpha[r];
      acc[r][1] = loadv(o + r * ldv + d0 + kLanes) * alpha[r];
    }
    for (int64_t c = 0; c < nc; ++c) {
      Vec v0 = loadv(v + c * row_stride);
      Vec v1 = loadv(v + c * row_stride + kLanes);
      pin_in_registers(v0, v1);
      for (int r = 0; r < R; ++r) {
        const float pr = p[r * kBc + c];
        acc[r][0] += pr * v0;
        acc[r][1] += pr * v1;
      }
    }
    for (int r = 0; r < R; ++r) {
      storev(o + r * ldv + d0, acc[r][0]);
      storev(o + r * ldv + d0 + kLanes, acc[r][1]);
    }
  }
}

}  // namespace detail

class FlashTile {
 public:
  FlashTile(int64_t head_dim, int64_t head_dim_v)
      : head_dim_(head_dim),
        head_dim_v_(head_dim_v),
        ldv_(round_up(head_dim_v, kStep)),
        q_(static_cast<size_t>(kBr * head_dim)),
        s_(static_cast<size_t>(kBr * kBc)),
        o_(static_cast<size_t>(kBr * ldv_)),
        kb_(static_cast<size_t>(kBc * head_dim)),
        m_(kBr, kNegInf),
        m_chunk_(kBr, kNegInf),
        alpha_(kBr, 0.0f),
        l_(kBr * kLanes) {}

  int64_t rows() const { return rows_; }

  // Starts a tile of `rows` (1..kBr) queries; row(r) points at query r's head_dim floats.
  // scale is folded into the copy of q, so S comes out already scaled.
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale) {
    begin(rows, row, scale, TileMods{});
  }
  // The same with the score modifiers of contract §2.8–§2.9: the softcap and ALiBi act on
  // every chunk's scores before the kernel's mask; a sink σ is the initial running max of
  // every row with a running sum of 1 (exp(σ − σ)), so a row no key reaches ends with
  // O = 0, l = 1: o = 0, lse = σ (contract §2.9).
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale, const TileMods& mods) {
    rows_ = rows;
    pipeline_ = ScorePipeline(mods, 1.0f);
    Vec l0 = splat(0.0f);
    if (mods.sink != kNegInf) l0[0] = 1.0f;  // lane 0 carries the sink's exp(σ − σ)
    for (int64_t r = 0; r < rows; ++r) {
      const float* qr = row(r);
      // Row r of group [r0, r0 + R) is stored interleaved (qk_rows): q_[r0·head_dim + d·R + r - r0].
      const int64_t r0 = r / kRowGroup * kRowGroup;
      const int64_t R = std::min<int64_t>(kRowGroup, rows - r0);
      float* dst = q_.data() + r0 * head_dim_ + (r - r0);
      for (int64_t d = 0; d < head_dim_; ++d) dst[d * R] = qr[d] * scale;
      m_[r] = mods.sink;
      storev(l_.data() + r * kLanes, l0);
    }
    std::fill(o_.begin(), o_.begin() + rows * ldv_, 0.0f);
  }

  // Consumes panel keys [u0, u0 + nc), 1 <= nc <= kBc. mask(r, s) may set s[c] = -inf for
  // any c < nc that row r must not attend; s is row r of the scaled scores.
  template <class Mask>
  void step(const KeyPanel& panel, int64_t u0, int64_t nc, Mask&& mask) {
    step(panel, u0, nc, mask, ChunkKeys{u0, 1});
  }
  // The same for a panel whose key u is not key u of the sequence: column c of the chunk is
  // key keys.first + c·keys.stride (read by ALiBi only).
  template <class Mask>
  void step(const KeyPanel& panel, int64_t u0, int64_t nc, Mask&& mask, ChunkKeys keys) {
    const int64_t width = round_up(nc, kStep);
    // Keys in the micro-kernel's order: the panel's own blocks when the chunk starts on one.
    const float* kb = panel.kb.get() + u0 * head_dim_;
    if (u0 % kStep != 0) {
      copy_chunk(panel, u0, width);
      kb = kb_.data();
    }
    for_row_groups([&](auto group, int64_t r0) {
      constexpr int R = decltype(group)::value;
      detail::qk_rows<R>(q_.data() + r0 * head_dim_, head_dim_, kb, width, s_.data() + r0 * kBc);
    });
    for (int64_t r = 0; r < rows_; ++r) {
      float* s = s_.data() + r * kBc;
      if (pipeline_.active()) pipeline_.apply(r, s, width, keys);  // softcap, ALiBi
      for (int64_t c = nc; c < width; ++c) s[c] = kNegInf;  // panel padding is no key
      mask(r, s);
      m_chunk_[r] = row_max(s, width);
    }
    rescale_factors();
    for (int64_t r = 0; r < rows_; ++r) exponentiate(r, s_.data() + r * kBc, width);
    for_row_groups([&](auto group, int64_t r0) {
      constexpr int R = decltype(group)::value;
      detail::pv_rows<R>(s_.data() + r0 * kBc, nc, panel.v + u0 * panel.v_row, panel.v_row,
                         panel.v_block, ldv_, alpha_.data() + r0, o_.data() + r0 * ldv_);
    });
  }

  // write(r, o_row, lse): o_row holds head_dim_v floats of query r's output.
  template <class Write>
  void finish(Write&& write) {
    AlignedFloats& row = s_;  // reuse scratch: the tile is done
    if (static_cast<int64_t>(row.size()) < head_dim_v_) row.resize(head_dim_v_);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* o = o_.data() + r * ldv_;
      const float l = hsum(loadv(l_.data() + r * kLanes));  // lanes in a fixed tree order
      if (l == 0.0f) {
        std::fill(row.begin(), row.begin() + head_dim_v_, 0.0f);
        write(r, row.data(), kNegInf);
        continue;
      }
      const float inv_l = 1.0f / l;
      for (int64_t d = 0; d < head_dim_v_; ++d) row[d] = o[d] * inv_l;
      write(r, row.data(), m_[r] + std::log(l));
    }
  }

 private:
  template <int R>
  struct Rows {
    static constexpr int value = R;
  };

  // Calls f(Rows<kRowGroup>, r0) over the tile in groups of kRowGroup rows, then one
  // group of the 1 .. kRowGroup-1 rows left.
  template <class F>
  void for_row_groups(F&& f) {
    int64_t r0 = 0;
    for (; r0 + kRowGroup <= rows_; r0 += kRowGroup) f(Rows<kRowGroup>{}, r0);
    tail_group<kRowGroup - 1>(rows_ - r0, r0, f);
  }
  template <int R, class F>
  static void tail_group(int64_t left, int64_t r0, F& f) {
    if constexpr (R > 0) {
      if (left == R) return f(Rows<R>{}, r0);
      tail_group<R - 1>(left, r0, f);
    }
  }

  // Copies the keys of a chunk that does not start on a panel block into kStep-wide
  // blocks (kb_), so the QKᵀ micro-kernel reads them as one contiguous stream: each
  // step's keys u0 + c0 … are the tail of one panel block and the head of the next.
  // The copy costs head_dim · width moves per chunk, against
  // rows · width · (head_dim + ldv) FMAs.
  void copy_chunk(const KeyPanel& panel, int64_t u0, int64_t width) {
    const int64_t o = u0 % kStep, block = head_dim_ * kStep;
    for (int64_t c0 = 0; c0 < width; c0 += kStep) {
      const float* src = panel.kb.get() + (u0 + c0) / kStep * block;  // block b, then b + 1
      float* dst = kb_.data() + c0 * head_dim_;
      for (int64_t d = 0; d < head_dim_; ++d) {
        std::copy(src + d * kStep + o, src + (d + 1) * kStep, dst + d * kStep);
        std::copy(src + block + d * kStep, src + block + d * kStep + o, dst + d * kStep + kStep - o);
      }
    }
  }

  // The online-softmax update (Dao et al. 2022, Alg. 1, lines 9–12) in three passes, so
  // that no row waits on a scalar exp or a branch: the chunk maximum of every row
  // (row_max), then m_new and α = exp(m_old − m_new) for all rows at once, kLanes rows per
  // vector (rescale_factors), then P = exp(S − m_new) and l = α·l + Σ P per row
  // (exponentiate). O is rescaled by α inside pv_rows, as it is reloaded anyway.
  static float row_max(const float* s, int64_t width) {
    Vec vmax = splat(kNegInf);
    for (int64_t c = 0; c < width; c += kLanes) {
      const Vec x = loadv(s + c);
      vmax = x > vmax ? x : vmax;
    }
    return hmax(vmax);
  }

  // Every row of the tile (kBr, a multiple of kLanes; rows past rows_ are unused). A row
  // with nothing allowed yet keeps m = -inf and gets α = 0 (never exp(-inf − -inf) = NaN):
  // its l and O are 0 and stay 0.
  void rescale_factors() {
    for (int64_t r = 0; r < kBr; r += kLanes) {
      const Vec m_old = loadv(m_.data() + r), m_chunk = loadv(m_chunk_.data() + r);
      const Vec m_new = m_chunk > m_old ? m_chunk : m_old;
      const Vec alpha = vexp(m_old - m_new);
      storev(alpha_.data() + r, m_old == splat(kNegInf) ? splat(0.0f) : alpha);
      storev(m_.data() + r, m_new);
    }
  }

  // On return s holds P = exp(S − m) (0 where masked: exp(-inf) is exactly 0, and a row
  // with m = -inf is shifted by 0 instead, so its -inf scores still give 0).
  void exponentiate(int64_t r, float* s, int64_t width) {
    const float m = m_[r];
    const Vec shift = splat(m == kNegInf ? 0.0f : m);
    Vec vsum = splat(0.0f);
    for (int64_t c = 0; c < width; c += kLanes) {
      const Vec p = vexp(loadv(s + c) - shift);
      storev(s + c, p);
      vsum += p;
    }
    float* l = l_.data() + r * kLanes;
    storev(l, loadv(l) * alpha_[r] + vsum);
  }

  int64_t head_dim_, head_dim_v_, ldv_;
  int64_t rows_ = 0;
  ScorePipeline pipeline_;  // the tile's softcap and ALiBi (inactive: plain attention)
  AlignedFloats q_;  // [kBr][head_dim], scaled
  AlignedFloats s_;  // [kBr][kBc] scores, then P
  AlignedFloats o_;  // [kBr][ldv] unnormalized output
  AlignedFloats kb_;  // [kBc / kStep][head_dim][kStep] the chunk's keys
  std::vector<float> m_;  // [kBr] running max
  std::vector<float> m_chunk_;  // [kBr] the current chunk's row maxima
  std::vector<float> alpha_;  // [kBr] exp(m_old − m_new) of the current chunk
  std::vector<float> l_;  // [kBr][kLanes] running sum, per lane; lanes summed in finish()
};

SPARSEATTN_ISA_END
