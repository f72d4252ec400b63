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

namespace detail {

// An empty asm that claims to modify a and b: GCC must hold them in registers, instead of
// folding each use into an FMA memory operand — which turns the 2 loads per step into
// 2·R loads and makes the micro-kernel load-bound.
inline void pin_in_registers(Vec& a, Vec& b) { __asm__("" : "+v"(a), "+v"(b)); }

// s[r][c] = Σ_d q[r][d] · k[c][d] for R rows, c in [0, width), width a multiple of kStep.
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
        const float qv = q[r * head_dim + d];
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

// o[r][:] += Σ_{c < nc} p[r][c] · v[c][:] for R rows; ldv a multiple of kStep. The sum
// runs over c in increasing order for every row (fixed reduction order). vb is the chunk's
// values in blocks of kStep columns: vb[(d / kStep) · kBc · kStep + c · kStep + d % kStep].
template <int R>
inline void pv_rows(const float* p, int64_t nc, const float* vb, int64_t ldv, float* o) {
  for (int64_t d0 = 0; d0 < ldv; d0 += kStep) {
    const float* v = vb + d0 * kBc;  // block d0 / kStep
    Vec acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = loadv(o + r * ldv + d0);
      acc[r][1] = loadv(o + r * ldv + d0 + kLanes);
    }
    for (int64_t c = 0; c < nc; ++c) {
      Vec v0 = loadv(v + c * kStep);
      Vec v1 = loadv(v + c * kStep + kLanes);
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
        vb_(static_cast<size_t>(kBc * ldv_)),
        m_(kBr),
        l_(kBr) {}

  int64_t rows() const { return rows_; }

  // Starts a tile of `rows` (1..kBr) queries; row(r) points at query r's head_dim floats.
  // scale is folded into the copy of q, so S comes out already scaled.
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale) {
    rows_ = rows;
    for (int64_t r = 0; r < rows; ++r) {
      const float* qr = row(r);
      for (int64_t d = 0; d < head_dim_; ++d) q_[r * head_dim_ + d] = qr[d] * scale;
      m_[r] = kNegInf;
      l_[r] = 0.0f;
    }
    std::fill(o_.begin(), o_.begin() + rows * ldv_, 0.0f);
  }

  // Consumes panel keys [u0, u0 + nc), 1 <= nc <= kBc. mask(r, s) may set s[c] = -inf for
  // any c < nc that row r must not attend; s is row r of the scaled scores.
  template <class Mask>
  void step(const KeyPanel& panel, int64_t u0, int64_t nc, Mask&& mask) {
    const int64_t width = round_up(nc, kStep);
    copy_chunk(panel, u0, nc, width);
    for_row_groups([&](auto group, int64_t r0) {
      constexpr int R = decltype(group)::value;
      detail::qk_rows<R>(q_.data() + r0 * head_dim_, head_dim_, kb_.data(), width,
                         s_.data() + r0 * kBc);
    });
    for (int64_t r = 0; r < rows_; ++r) {
      float* s = s_.data() + r * kBc;
      for (int64_t c = nc; c < width; ++c) s[c] = kNegInf;  // panel padding is no key
      mask(r, s);
      softmax_update(r, s, width);
    }
    for_row_groups([&](auto group, int64_t r0) {
      constexpr int R = decltype(group)::value;
      detail::pv_rows<R>(s_.data() + r0 * kBc, nc, vb_.data(), ldv_, o_.data() + r0 * ldv_);
    });
  }

  // write(r, o_row, lse): o_row holds head_dim_v floats of query r's output.
  template <class Write>
  void finish(Write&& write) {
    std::vector<float>& row = s_;  // reuse scratch: the tile is done
    if (static_cast<int64_t>(row.size()) < head_dim_v_) row.resize(head_dim_v_);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* o = o_.data() + r * ldv_;
      if (l_[r] == 0.0f) {
        std::fill(row.begin(), row.begin() + head_dim_v_, 0.0f);
        write(r, row.data(), kNegInf);
        continue;
      }
      const float inv_l = 1.0f / l_[r];
      for (int64_t d = 0; d < head_dim_v_; ++d) row[d] = o[d] * inv_l;
      write(r, row.data(), m_[r] + std::log(l_[r]));
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

  // Copies the chunk's keys and values into kStep-wide blocks (kb_, vb_), so the
  // micro-kernels read them as one contiguous stream. Read in place, the transposed panel
  // has one cache line per head-dimension row per kStep keys — a new line on every load,
  // which made the micro-kernels wait on L2 (measured: the dominant stall in k01).
  // The copy costs head_dim · width + width · ldv moves per chunk, against
  // rows · width · (head_dim + ldv) FMAs.
  void copy_chunk(const KeyPanel& panel, int64_t u0, int64_t nc, int64_t width) {
    for (int64_t d = 0; d < head_dim_; ++d) {
      const float* src = panel.kt.data() + d * panel.ldk + u0;
      for (int64_t c0 = 0; c0 < width; c0 += kStep) {
        float* dst = kb_.data() + c0 * head_dim_ + d * kStep;
        storev(dst, loadv(src + c0));
        storev(dst + kLanes, loadv(src + c0 + kLanes));
      }
    }
    for (int64_t c = 0; c < nc; ++c) {
      const float* src = panel.v.data() + (u0 + c) * panel.ldv;
      for (int64_t d0 = 0; d0 < ldv_; d0 += kStep) {
        float* dst = vb_.data() + d0 * kBc + c * kStep;
        storev(dst, loadv(src + d0));
        storev(dst + kLanes, loadv(src + d0 + kLanes));
      }
    }
  }

  // The online-softmax update of row r; on return s holds P (0 where masked).
  void softmax_update(int64_t r, float* s, int64_t width) {
    Vec vmax = splat(kNegInf);
    for (int64_t c = 0; c < width; c += kLanes) {
      const Vec x = loadv(s + c);
      vmax = x > vmax ? x : vmax;
    }
    const float m_old = m_[r];
    const float m_chunk = hmax(vmax);
    const float m_new = m_chunk > m_old ? m_chunk : m_old;
    if (m_new == kNegInf) {  // nothing allowed yet: P = 0, state unchanged
      std::fill(s, s + width, 0.0f);
      return;
    }
    const Vec shift = splat(m_new);
    Vec vsum = splat(0.0f);
    for (int64_t c = 0; c < width; c += kLanes) {
      const Vec p = vexp(loadv(s + c) - shift);
      storev(s + c, p);
      vsum += p;
    }
    if (m_new != m_old) {
      const float alpha = m_old == kNegInf ? 0.0f : std::exp(m_old - m_new);
      l_[r] *= alpha;
      float* o = o_.data() + r * ldv_;
      for (int64_t d = 0; d < ldv_; ++d) o[d] *= alpha;
    }
    l_[r] += hsum(vsum);
    m_[r] = m_new;
  }

  int64_t head_dim_, head_dim_v_, ldv_;
  int64_t rows_ = 0;
  std::vector<float> q_;  // [kBr][head_dim], scaled
  std::vector<float> s_;  // [kBr][kBc] scores, then P
  std::vector<float> o_;  // [kBr][ldv] unnormalized output
  std::vector<float> kb_;  // [kBc / kStep][head_dim][kStep] the chunk's keys
  std::vector<float> vb_;  // [ldv / kStep][kBc][kStep] the chunk's values
  std::vector<float> m_;  // [kBr] running max
  std::vector<float> l_;  // [kBr] running sum
};

SPARSEATTN_ISA_END
