// The block engine of the CPU backward kernels (kb01, kb02): one 64-query × 64-key block
// of FlashAttention-2's backward (Dao 2023, Alg. 2, lines 11-13), float32, vectorized.
//   Block::pack   the block's keys and values, transposed (kT [D][64], vT [Dv][64]);
//   Block::p_ds   P = exp(S − lse) and dS = P ∘ (dP − D) for up to 64 rows, with the
//                 layout's mask, key padding, and rows with lse = -inf skipped (live = 0);
//   accumulate_rows   y += Σ_t w_t x_t in a fixed order: dV += Pᵀ dO, dK += dSᵀ Q, dQ += dS K.
// Every loop is an axpy over columns (no reduction across lanes), so vectorization changes
// no rounding, and a result depends only on its inputs, never on the thread.
// Measured: not timed on its own; it is inside kb01's and kb02's figures (docs/backward.md,
// "Backward / forward time").
#pragma once

#include <algorithm>
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

// The (batch, head) slices of every tensor.
struct Head {
  const float *q, *k, *v, *dout, *lse, *D;
  float *dq, *dk, *dv;
  const uint8_t* key_valid;  // nullptr: no padding
};

inline Head head_of(const GradInputs& in, const GradOutputs& out, const std::vector<float>& D,
             int64_t b, int64_t h) {
  const AttentionShape& s = in.shape;
  const int64_t bh = b * s.num_heads + h;
  return {in.q + bh * s.seq_len_q * s.head_dim,   in.k + bh * s.seq_len_k * s.head_dim,
          in.v + bh * s.seq_len_k * s.head_dim_v, in.dout + bh * s.seq_len_q * s.head_dim_v,
          in.lse + bh * s.seq_len_q,              D.data() + bh * s.seq_len_q,
          out.dq + bh * s.seq_len_q * s.head_dim, out.dk + bh * s.seq_len_k * s.head_dim,
          out.dv + bh * s.seq_len_k * s.head_dim_v, key_padding_row(*in.pattern, b)};
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
