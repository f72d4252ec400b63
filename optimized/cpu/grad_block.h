// The block engine of the CPU backward kernels (kb01, kb02): one 64-query × 64-key block
// of FlashAttention-2's backward (Dao 2023, Alg. 2, lines 11-13), float32, vectorized.
//   Block::pack   the block's keys and values, transposed (kT [D][64], vT [Dv][64]);
//   Block::p_ds   P = exp(S − lse) and dS = P ∘ (dP − D) for up to 64 rows, with the
//                 layout's mask, key padding, and rows with lse = -inf skipped (live = 0);
//                 the softcap and ALiBi of contract §2.8 on S, the softcap's 1 − tanh² on dS;
//   accumulate_rows   y += Σ_t w_t x_t in a fixed order: dV += Pᵀ dO, dK += dSᵀ Q, dQ += dS K.
// Every loop is an axpy over columns (no reduction across lanes), so vectorization changes
// no rounding, and a result depends only on its inputs, never on the thread.
// Measured: not timed on its own; it is inside kb01's and kb02's figures (docs/backward.md,
// "Backward / forward time").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "optimized/cpu/common.h"
#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN
namespace grad {

constexpr int64_t kBq = 64;  // query rows per block
constexpr int64_t kBk = 64;  // keys per block (a multiple of kV8)
// The backward is built for 256-bit vectors only (isa.h: the avx2 build); v8f is its vector.
constexpr int kV8 = 8;

// The (batch, query head) slices of every tensor: k, v of the kv head it reads (contract
// §2.7), dk, dv where pass 1 writes them (KeyGrads), and the head's score modifiers.
struct Head {
  const float *q, *k, *v, *dout, *lse, *D;
  float *dq, *dk, *dv;
  const uint8_t* key_valid;  // nullptr: no padding
  float cap = 0.0f, inv_cap = 0.0f;  // softcap c and 1/c; 0: none (contract §2.8)
  bool alibi = false;
  float slope = 0.0f;                // a[b, h]
  int64_t q_offset = 0;              // L_k − L_q: query i sits at position p = i + q_offset
};

// Where pass 1 writes dk and dv. With one query head per kv head (g = 1), straight into the
// outputs; with g > 1 into per-query-head buffers [B, H_q, L_k, D] that sum_groups() adds
// over each group in head order afterwards (FlashAttention-2's dk_expanded, summed without
// atomics). Every query head's layout may have its own tiles (per-head patterns), so the g
// heads' key blocks need not line up; the price is g·|dk| + g·|dv| floats while it runs.
struct KeyGrads {
  std::vector<float> dk_x, dv_x;
  float *dk = nullptr, *dv = nullptr;  // [B, H_q or H_kv, L_k, D or D_v]
  bool expanded = false;
};

inline KeyGrads key_grads(const GradInputs& in, const GradOutputs& out) {
  const AttentionShape& s = in.shape;
  KeyGrads kg;
  kg.expanded = s.group() > 1;
  if (!kg.expanded) {
    kg.dk = out.dk;
    kg.dv = out.dv;
    return kg;
  }
  const int64_t rows = s.batch * s.num_heads * s.seq_len_k;
  kg.dk_x.resize(static_cast<size_t>(rows * s.head_dim));
  kg.dv_x.resize(static_cast<size_t>(rows * s.head_dim_v));
  kg.dk = kg.dk_x.data();
  kg.dv = kg.dv_x.data();
  return kg;
}

// dk[b, kv, j] = Σ_{t < g} dk_x[b, kv·g + t, j] in t order (likewise dv); nothing for g = 1.
// Every output element is one thread's: bit-identical for any thread count.
inline void sum_groups(const GradInputs& in, const KeyGrads& kg, const GradOutputs& out) {
  if (!kg.expanded) return;
  const AttentionShape& s = in.shape;
  const int64_t g = s.group(), Lk = s.seq_len_k, Dh = s.head_dim, Dv = s.head_dim_v;
  const int64_t rows = s.batch * s.num_kv_heads * Lk;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t bkv = row / Lk, j = row % Lk;
    auto add = [&](const float* x, float* y, int64_t n) {
      for (int64_t d = 0; d < n; ++d) {
        float acc = 0.0f;
        for (int64_t t = 0; t < g; ++t) acc += x[((bkv * g + t) * Lk + j) * n + d];
        y[row * n + d] = acc;
      }
    };
    add(kg.dk, out.dk, Dh);
    add(kg.dv, out.dv, Dv);
  }
}

inline Head head_of(const GradInputs& in, const GradOutputs& out, const KeyGrads& kg,
                    const std::vector<float>& D, int64_t b, int64_t h) {
  const AttentionShape& s = in.shape;
  const int64_t bh = b * s.num_heads + h, bkv = kv_index(s, b, h);
  const int64_t bk = kg.expanded ? bh : bkv;  // dk, dv rows: per query head or per kv head
  Head hd{in.q + bh * s.seq_len_q * s.head_dim,   in.k + bkv * s.seq_len_k * s.head_dim,
          in.v + bkv * s.seq_len_k * s.head_dim_v, in.dout + bh * s.seq_len_q * s.head_dim_v,
          in.lse + bh * s.seq_len_q,              D.data() + bh * s.seq_len_q,
          out.dq + bh * s.seq_len_q * s.head_dim, kg.dk + bk * s.seq_len_k * s.head_dim,
          kg.dv + bk * s.seq_len_k * s.head_dim_v, key_padding_row(*in.pattern, b)};
  const Mods& m = in.mods;
  if (m.softcap > 0.0f) {
    hd.cap = m.softcap;
    hd.inv_cap = 1.0f / m.softcap;
  }
  if (m.slopes != nullptr) {
    hd.alibi = true;
    hd.slope = m.slopes[b * m.slopes_batch_stride + h];
  }
  hd.q_offset = s.seq_len_k - s.seq_len_q;
  return hd;
}

// dσ_h = −Σ_{b,i} exp(σ_h − lse_{b,h,i})·D_{b,h,i} (contract §7.7), float64, (b, i)
// ascending: the sink's column of the softmax Jacobian, whose value is 0 (so its dP is 0).
// Rows with lse = -inf (padded queries) do not exist and are skipped; a real row without
// keys has o = 0, so D = 0 and it adds 0. Nothing without sinks.
inline void sink_grads(const GradInputs& in, const std::vector<float>& D, double* dsinks) {
  if (in.mods.sinks == nullptr || dsinks == nullptr) return;
  const AttentionShape& s = in.shape;
  for (int64_t h = 0; h < s.num_heads; ++h) {
    const double sigma = in.mods.sinks[h];
    double acc = 0.0;
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t row0 = (b * s.num_heads + h) * s.seq_len_q;
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        const float lse = in.lse[row0 + i];
        if (lse == kNegInf) continue;
        acc += std::exp(sigma - static_cast<double>(lse)) * static_cast<double>(D[row0 + i]);
      }
    }
    dsinks[h] = -acc;
  }
}

// out[c] = Σ_d (a · x[d]) · panel[d][c] for the kBk columns of a [n][kBk] panel, d in
// increasing order: one row of S = (scale Q) Kᵀ or of dP = dO Vᵀ. The kBk / 8 accumulators
// stay in registers over the whole d loop (one panel load and one FMA per vector per d).
inline void row_times_panel(const float* x, float a, const float* panel, int64_t n, float* out) {
  v8f acc[kBk / kV8] = {};
  for (int64_t d = 0; d < n; ++d) {
    const v8f xd = splat8(x[d] * a);
    const float* row = panel + d * kBk;
#pragma GCC unroll 8
    for (int v = 0; v < kBk / kV8; ++v) acc[v] += xd * load8(row + v * kV8);
  }
#pragma GCC unroll 8
  for (int v = 0; v < kBk / kV8; ++v) store8(out + v * kV8, acc[v]);
}

// y[0..n) += Σ_t w[t · w_stride] · x[t · ldx + 0..n) over the t < count with use(t), t in
// increasing order: dV_c += Σ_r P[r][c] dO_r, dK_c += Σ_r dS[r][c] q_r, dQ_r += Σ_c dS[r][c] k_c.
// y is read once and written once per 32 columns; the sum over t stays in four registers,
// so the loop costs one load and one FMA per vector of x. Every element of y sums its terms
// in the same order (t ascending) whichever path (vector block or tail) it takes.
template <class Use>
inline void accumulate_rows(const float* w, int64_t w_stride, const float* x, int64_t ldx,
                            int64_t count, Use&& use, float* y, int64_t n) {
  int64_t d0 = 0;
  for (; d0 + 32 <= n; d0 += 32) {
    v8f a0 = load8(y + d0), a1 = load8(y + d0 + 8), a2 = load8(y + d0 + 16), a3 = load8(y + d0 + 24);
    for (int64_t t = 0; t < count; ++t) {
      if (!use(t)) continue;
      const v8f wt = splat8(w[t * w_stride]);
      const float* xt = x + t * ldx + d0;
      a0 += wt * load8(xt);
      a1 += wt * load8(xt + 8);
      a2 += wt * load8(xt + 16);
      a3 += wt * load8(xt + 24);
    }
    store8(y + d0, a0);
    store8(y + d0 + 8, a1);
    store8(y + d0 + 16, a2);
    store8(y + d0 + 24, a3);
  }
  for (; d0 < n; ++d0) {
    float a = y[d0];
    for (int64_t t = 0; t < count; ++t)
      if (use(t)) a += w[t * w_stride] * x[t * ldx + d0];
    y[d0] = a;
  }
}

// Per-thread buffers of one block.
struct Block {
  int64_t D, Dv;
  std::vector<float> kT;      // [D][kBk]  the block's keys, transposed; 0 past nc
  std::vector<float> vT;      // [Dv][kBk] its values, transposed
  std::vector<float> P;       // [kBq][kBk]
  std::vector<float> dS;      // [kBq][kBk]
  std::vector<uint8_t> live;  // [kBq] the row carries gradient
  std::vector<float> acc_a;   // pass 1: dk [kBk][D];  pass 2: dq [kBq][D]
  std::vector<float> acc_b;   // pass 1: dv [kBk][Dv]
  Block(int64_t d, int64_t dv)
      : D(d), Dv(dv), kT(d * kBk), vT(dv * kBk), P(kBq * kBk), dS(kBq * kBk), live(kBq),
        acc_a(std::max(kBq, kBk) * d), acc_b(kBk * dv) {}

  // Keys [j0, j0 + nc) of the head into kT, vT (zero columns past nc).
  void pack(const Head& hd, int64_t j0, int64_t nc) {
    std::fill(kT.begin(), kT.end(), 0.0f);
    std::fill(vT.begin(), vT.end(), 0.0f);
    for (int64_t c = 0; c < nc; ++c) {
      const float* kj = hd.k + (j0 + c) * D;
      const float* vj = hd.v + (j0 + c) * Dv;
      for (int64_t d = 0; d < D; ++d) kT[d * kBk + c] = kj[d];
      for (int64_t e = 0; e < Dv; ++e) vT[e * kBk + c] = vj[e];
    }
  }

  // P and dS of rows [i0, i0 + nr) against the packed keys [j0, j0 + nc).
  // allowed(r, c): the layout's verdict for a partial tile (ignored when `full`).
  // Returns whether any row is live.
  template <class Allowed>
  bool p_ds(const Head& hd, float scale, int64_t i0, int64_t nr, int64_t j0, int64_t nc,
            bool full, Allowed&& allowed) {
    bool any = false;
    alignas(32) float s[kBk];
    alignas(32) float dp[kBk];
    alignas(32) float dtanh[kBk];  // 1 − tanh²(s/c) with a softcap
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t i = i0 + r;
      float* p = &P[r * kBk];
      float* ds = &dS[r * kBk];
      const float lse = hd.lse[i];
      live[r] = lse != kNegInf;
      if (!live[r]) continue;
      // S row: s_c = Σ_d (scale q_d) kT[d][c]; every loop below is an axpy over c (no
      // reduction across lanes), so vectorizing it changes no rounding.
      row_times_panel(hd.q + i * D, scale, kT.data(), D, s);
      // The score pipeline after the scale (contract §2.8), as the forward kernels write it
      // (flash_tile.h): s = c·tanh(s/c), whose derivative 1 − tanh² scales dS below; then
      // s −= a·|p − j|, a constant per pair (its derivative with respect to s is 1).
      if (hd.cap > 0.0f) {
        const v8f c8 = splat8(hd.cap), inv8 = splat8(hd.inv_cap), one = splat8(1.0f);
        for (int64_t c = 0; c < kBk; c += kV8) {
          const v8f t = vtanh(load8(s + c) * inv8);
          store8(s + c, c8 * t);
          store8(dtanh + c, one - t * t);
        }
      }
      if (hd.alibi) {
        const int64_t p = i + hd.q_offset;
        for (int64_t c = 0; c < nc; ++c) {
          const int64_t j = j0 + c;
          s[c] -= hd.slope * static_cast<float>(p > j ? p - j : j - p);
        }
      }
      for (int64_t c = nc; c < kBk; ++c) s[c] = kNegInf;  // past the block: no key
      if (!full)
        for (int64_t c = 0; c < nc; ++c)
          if (!allowed(r, c)) s[c] = kNegInf;
      if (hd.key_valid != nullptr)
        for (int64_t c = 0; c < nc; ++c)
          if (!hd.key_valid[j0 + c]) s[c] = kNegInf;
      // P = exp(S − lse): exactly 0 where S = -inf (exp8 flushes below -87.3 to 0).
      const v8f shift = splat8(lse);
      for (int64_t c = 0; c < kBk; c += kV8) store8(p + c, exp8(load8(s + c) - shift));
      // dP row: dp_c = Σ_e do_e vT[e][c].
      row_times_panel(hd.dout + i * Dv, 1.0f, vT.data(), Dv, dp);
      const float Di = hd.D[i];
      if (hd.cap > 0.0f)
        for (int64_t c = 0; c < kBk; ++c) ds[c] = p[c] * (dp[c] - Di) * dtanh[c];
      else
        for (int64_t c = 0; c < kBk; ++c) ds[c] = p[c] * (dp[c] - Di);
      any = true;
    }
    return any;
  }
};


struct Item {
  int64_t b, h, tile, sub;  // (batch, head, tile index, 64-block inside the tile)
};


// Work items in a fixed order: (batch, head, tile, 64-block inside the tile) for the key
// tiles (keys = true) or the query tiles of every head.
inline std::vector<Item> block_items(const Pattern& pattern, int64_t B, bool keys) {
  std::vector<Item> items;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < pattern.sizes.num_heads; ++h) {
      const HeadLayout& L = pattern.head(h);
      const int64_t subs = (L.tile + kBk - 1) / kBk;
      const int64_t tiles = keys ? L.num_k_tiles() : L.num_q_tiles();
      const int64_t len = keys ? L.seq_len_k : L.seq_len_q;
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t x = 0; x < subs && t * L.tile + x * kBk < len; ++x) items.push_back({b, h, t, x});
    }
  return items;
}

// D_i = <do_i, o_i> for every row of every (batch, head) (Alg. 2, line 4), summed in index
// order.
inline std::vector<float> row_deltas(const GradInputs& in) {
  const AttentionShape& s = in.shape;
  const int64_t rows = s.batch * s.num_heads * s.seq_len_q, Dv = s.head_dim_v;
  std::vector<float> Drow(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const float* d = in.dout + row * Dv;
    const float* o = in.o + row * Dv;
    float acc = 0.0f;
    for (int64_t e = 0; e < Dv; ++e) acc += d[e] * o[e];
    Drow[row] = acc;
  }
  return Drow;
}

}  // namespace grad
SPARSEATTN_ISA_END
