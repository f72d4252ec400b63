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
// Micro-kernels: 6 query rows × 16 keys (S) and 6 query rows × 16 value columns (P V):
// 12 ymm accumulators — enough independent chains to cover the FMA latency on both FMA
// pipes — plus the two key (value) vectors and one broadcast: 15 of the 16 ymm registers.
// Per step 12 FMAs for 2 vector loads + 6 broadcasts, so the loop is FMA-bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "optimized/cpu/panel.h"
#include "optimized/cpu/simd.h"

namespace sparseattn::cpu {

inline constexpr int64_t kBr = 64;  // query rows per tile (the paper's B_r)
inline constexpr int64_t kBc = 64;  // keys per chunk (B_c); the S scratch is kBr × kBc
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The mask of a chunk with nothing to mask (interior tiles of dense, full layout tiles).
struct NoMask {
  void operator()(int64_t /*r*/, float* /*s*/) const {}
};

namespace detail {

// An empty asm that claims to modify a and b: GCC must hold them in registers, instead of
// folding each use into an FMA memory operand — which turns the 2 loads per step into
// 2·R loads and makes the micro-kernel load-bound.
inline void pin_in_registers(v8f& a, v8f& b) { __asm__("" : "+x"(a), "+x"(b)); }

// s[r][c] = Σ_d q[r][d] · k[c][d] for R rows, c in [0, width), width a multiple of 16.
// kb is the chunk's keys in blocks of 16: kb[(c / 16) · head_dim · 16 + d · 16 + c % 16].
template <int R>
inline void qk_rows(const float* q, int64_t head_dim, const float* kb, int64_t width, float* s) {
  for (int64_t c0 = 0; c0 < width; c0 += 16) {
    const float* k = kb + c0 * head_dim;  // block c0 / 16
    v8f acc[R][2] = {};
    for (int64_t d = 0; d < head_dim; ++d) {
      v8f k0 = load8(k + d * 16);
      v8f k1 = load8(k + d * 16 + 8);
      pin_in_registers(k0, k1);
      for (int r = 0; r < R; ++r) {
        const float qv = q[r * head_dim + d];
        acc[r][0] += qv * k0;
        acc[r][1] += qv * k1;
      }
    }
    for (int r = 0; r < R; ++r) {
      store8(s + r * kBc + c0, acc[r][0]);
      store8(s + r * kBc + c0 + 8, acc[r][1]);
    }
  }
}

// o[r][:] += Σ_{c < nc} p[r][c] · v[c][:] for R rows; ldv a multiple of 16. The sum runs
// over c in increasing order for every row (fixed reduction order). vb is the chunk's
// values in blocks of 16 columns: vb[(d / 16) · kBc · 16 + c · 16 + d % 16].
template <int R>
inline void pv_rows(const float* p, int64_t nc, const float* vb, int64_t ldv, float* o) {
  for (int64_t d0 = 0; d0 < ldv; d0 += 16) {
    const float* v = vb + d0 * kBc;  // block d0 / 16
    v8f acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = load8(o + r * ldv + d0);
      acc[r][1] = load8(o + r * ldv + d0 + 8);
    }
    for (int64_t c = 0; c < nc; ++c) {
      v8f v0 = load8(v + c * 16);
      v8f v1 = load8(v + c * 16 + 8);
      pin_in_registers(v0, v1);
      for (int r = 0; r < R; ++r) {
        const float pr = p[r * kBc + c];
        acc[r][0] += pr * v0;
        acc[r][1] += pr * v1;
      }
    }
    for (int r = 0; r < R; ++r) {
      store8(o + r * ldv + d0, acc[r][0]);
      store8(o + r * ldv + d0 + 8, acc[r][1]);
    }
  }
}

}  // namespace detail

class FlashTile {
 public:
  FlashTile(int64_t head_dim, int64_t head_dim_v)
      : head_dim_(head_dim),
        head_dim_v_(head_dim_v),
        ldv_(round_up(head_dim_v, kPad)),
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
    const int64_t width = round_up(nc, kPad);
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
    std::vector<float>& row = s_;  // reuse scratch: kBc >= 16 and the tile is done
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

  // Calls f(Rows<R>, r0) over the tile in groups of 6 rows, then one group of 1..5.
  template <class F>
  void for_row_groups(F&& f) {
    int64_t r0 = 0;
    for (; r0 + 6 <= rows_; r0 += 6) f(Rows<6>{}, r0);
    switch (rows_ - r0) {
      case 5: f(Rows<5>{}, r0); break;
      case 4: f(Rows<4>{}, r0); break;
      case 3: f(Rows<3>{}, r0); break;
      case 2: f(Rows<2>{}, r0); break;
      case 1: f(Rows<1>{}, r0); break;
      default: break;
    }
  }

  // Copies the chunk's keys and values into 16-wide blocks (kb_, vb_), so the
  // micro-kernels read them as one contiguous stream. Read in place, the transposed panel
  // has one cache line per head-dimension row per 16 keys — a new line on every load,
  // which made the micro-kernels wait on L2 (measured: the dominant stall in k01).
  // The copy costs head_dim · width + width · ldv moves per chunk, against
  // rows · width · (head_dim + ldv) FMAs.
  void copy_chunk(const KeyPanel& panel, int64_t u0, int64_t nc, int64_t width) {
    for (int64_t d = 0; d < head_dim_; ++d) {
      const float* src = panel.kt.data() + d * panel.ldk + u0;
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        float* dst = kb_.data() + c0 * head_dim_ + d * 16;
        store8(dst, load8(src + c0));
        store8(dst + 8, load8(src + c0 + 8));
      }
    }
    for (int64_t c = 0; c < nc; ++c) {
      const float* src = panel.v.data() + (u0 + c) * panel.ldv;
      for (int64_t d0 = 0; d0 < ldv_; d0 += 16) {
        float* dst = vb_.data() + d0 * kBc + c * 16;
        store8(dst, load8(src + d0));
        store8(dst + 8, load8(src + d0 + 8));
      }
    }
  }

  // The online-softmax update of row r; on return s holds P (0 where masked).
  void softmax_update(int64_t r, float* s, int64_t width) {
    v8f vmax = splat8(kNegInf);
    for (int64_t c = 0; c < width; c += kLanes) {
      const v8f x = load8(s + c);
      vmax = x > vmax ? x : vmax;
    }
    const float m_old = m_[r];
    const float m_chunk = hmax8(vmax);
    const float m_new = m_chunk > m_old ? m_chunk : m_old;
    if (m_new == kNegInf) {  // nothing allowed yet: P = 0, state unchanged
      std::fill(s, s + width, 0.0f);
      return;
    }
    const v8f shift = splat8(m_new);
    v8f vsum = splat8(0.0f);
    for (int64_t c = 0; c < width; c += kLanes) {
      const v8f p = exp8(load8(s + c) - shift);
      store8(s + c, p);
      vsum += p;
    }
    if (m_new != m_old) {
      const float alpha = m_old == kNegInf ? 0.0f : std::exp(m_old - m_new);
      l_[r] *= alpha;
      float* o = o_.data() + r * ldv_;
      for (int64_t d = 0; d < ldv_; ++d) o[d] *= alpha;
    }
    l_[r] += hsum8(vsum);
    m_[r] = m_new;
  }

  int64_t head_dim_, head_dim_v_, ldv_;
  int64_t rows_ = 0;
  std::vector<float> q_;  // [kBr][head_dim], scaled
  std::vector<float> s_;  // [kBr][kBc] scores, then P
  std::vector<float> o_;  // [kBr][ldv] unnormalized output
  std::vector<float> kb_;  // [kBc / 16][head_dim][16] the chunk's keys
  std::vector<float> vb_;  // [ldv / 16][kBc][16] the chunk's values
  std::vector<float> m_;  // [kBr] running max
  std::vector<float> l_;  // [kBr] running sum
};

}  // namespace sparseattn::cpu
