// kb01 — generic backward over the canonical layout, float32, OpenMP + SIMD
// (FlashAttention-2 backward, Dao 2023, Alg. 2, made deterministic).
//
// Contract (grad_kernels.h): matches b1_dense_masked_grad within kTolFloat32 (atol 2e-5,
// rtol 2e-4, core/numerics.h) on dq, dk, dv; serves every pattern kind and key padding;
// bit-identical for any OpenMP thread count.
//
// What changed since the reference b3: the same per-tile formulas on float32 blocks of at
// most 64 queries × 64 keys, vectorized, and the work split so that no two workers ever
// write the same output element:
//   pass 1 (dK, dV): one work item per (batch, head, key tile, block of 64 keys). It walks
//     the query tiles that list its key tile (ColumnLayout: the layout's transpose, query
//     tiles ascending) and accumulates dv_j += p_ij do_i and dk_j += ds_ij q_i in registers
//     of its own — FlashAttention-2's key-tile outer loop.
//   pass 2 (dQ): one work item per (batch, head, query tile, block of 64 rows). It walks the
//     key tiles its query tile lists (ascending) and accumulates dq_i += ds_ij k_j.
// FlashAttention-2 instead adds dq from every key-tile worker with atomics, whose order
// (and so whose rounding) depends on the schedule; here each output element has one owner
// that sums in a fixed order, so the result is bit-identical whatever the thread count.
// The price: pass 2 recomputes S, P, dP and dS (3 of the pass's 7 block products instead
// of FA2's 5), so the expected backward/forward ratio is about 3.5 rather than 2.5
// (measured: docs/backward.md).
// Per block (rows i, keys j), with D_i = <do_i, o_i> computed once per row:
//   S = scale·Q Kᵀ (masked: -inf),  P = exp(S − lse),  dP = dO Vᵀ,  dS = P ∘ (dP − D).
// A row with lse = -inf (fully masked, padded query) is skipped: its dq stays 0 and it adds
// nothing; a padded key's scores are -inf, so its P and dS are 0 and dk = dv = 0.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "optimized/cpu/common.h"
#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/simd.h"
#include "reference/pattern/column_layout.h"

namespace sparseattn::cpu {

namespace {

constexpr int64_t kBq = 64;  // query rows per block
constexpr int64_t kBk = 64;  // keys per block (a multiple of kLanes)

// The (batch, head) slices of every tensor.
struct Head {
  const float *q, *k, *v, *dout, *lse, *D;
  float *dq, *dk, *dv;
  const uint8_t* key_valid;  // nullptr: no padding
};

Head head_of(const GradInputs& in, const GradOutputs& out, const std::vector<float>& D,
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
  v8f acc[kBk / kLanes] = {};
  for (int64_t d = 0; d < n; ++d) {
    const v8f xd = splat8(x[d] * a);
    const float* row = panel + d * kBk;
#pragma GCC unroll 8
    for (int v = 0; v < kBk / kLanes; ++v) acc[v] += xd * load8(row + v * kLanes);
  }
#pragma GCC unroll 8
  for (int v = 0; v < kBk / kLanes; ++v) store8(out + v * kLanes, acc[v]);
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
      for (int64_t c = 0; c < kBk; c += kLanes) store8(p + c, exp8(load8(s + c) - shift));
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

}  // namespace

bool kb01_serves(const Pattern&) { return true; }

void kb01_generic_tiles_grad(const GradInputs& in, const GradOutputs& out) {
  const Pattern& pattern = *in.pattern;
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Lq = s.seq_len_q, Lk = s.seq_len_k;
  const int64_t Dh = s.head_dim, Dv = s.head_dim_v;

  // D_i = <do_i, o_i> (Alg. 2, line 4), summed in index order; 0 for a fully masked row.
  std::vector<float> Drow(static_cast<size_t>(B * H * Lq));
  const int64_t rows_total = B * H * Lq;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows_total; ++row) {
    const float* d = in.dout + row * Dv;
    const float* o = in.o + row * Dv;
    float acc = 0.0f;
    for (int64_t e = 0; e < Dv; ++e) acc += d[e] * o[e];
    Drow[row] = acc;
  }

  std::vector<ColumnLayout> columns(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) columns[h] = column_layout(pattern.head(h));

  // Work items of both passes, in a fixed order (the schedule may move them between
  // threads; each owns its output rows, so that changes no result).
  std::vector<Item> key_items, query_items;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const HeadLayout& L = pattern.head(h);
      const int64_t subs = (L.tile + kBk - 1) / kBk;
      for (int64_t kt = 0; kt < L.num_k_tiles(); ++kt)
        for (int64_t x = 0; x < subs && kt * L.tile + x * kBk < Lk; ++x) key_items.push_back({b, h, kt, x});
      for (int64_t qt = 0; qt < L.num_q_tiles(); ++qt)
        for (int64_t x = 0; x < subs && qt * L.tile + x * kBq < Lq; ++x) query_items.push_back({b, h, qt, x});
    }
  const int64_t n_key_items = static_cast<int64_t>(key_items.size());
  const int64_t n_query_items = static_cast<int64_t>(query_items.size());

#pragma omp parallel
  {
    Block blk(Dh, Dv);

    // Pass 1: dK, dV per block of keys.
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_key_items; ++it) {
      const Item& w = key_items[it];
      const HeadLayout& L = pattern.head(w.h);
      const ColumnLayout& C = columns[w.h];
      const Head hd = head_of(in, out, Drow, w.b, w.h);
      const int64_t T = L.tile;
      const int64_t j0 = w.tile * T + w.sub * kBk;
      const int64_t nc = std::min({kBk, (w.tile + 1) * T - j0, Lk - j0});
      blk.pack(hd, j0, nc);
      float* dk_acc = blk.acc_a.data();
      float* dv_acc = blk.acc_b.data();
      std::fill(dk_acc, dk_acc + nc * Dh, 0.0f);
      std::fill(dv_acc, dv_acc + nc * Dv, 0.0f);
      for (int64_t x = C.col_ptr[w.tile]; x < C.col_ptr[w.tile + 1]; ++x) {
        const int64_t e = C.entry[x], qt = C.row[x];
        const bool full = L.is_full(e);
        for (int64_t i0 = qt * T; i0 < std::min((qt + 1) * T, Lq); i0 += kBq) {
          const int64_t nr = std::min({kBq, (qt + 1) * T - i0, Lq - i0});
          const int64_t r_tile = i0 - qt * T, c_tile = j0 - w.tile * T;
          if (!blk.p_ds(hd, in.scale, i0, nr, j0, nc, full, [&](int64_t r, int64_t c) {
                return L.tile_allows(e, r_tile + r, c_tile + c);
              }))
            continue;
          // dv_c += Σ_r p_rc do_r and dk_c += Σ_r ds_rc q_r over the live rows, r ascending.
          const uint8_t* live = blk.live.data();
          auto is_live = [live](int64_t r) { return live[r] != 0; };
          for (int64_t c = 0; c < nc; ++c) {
            accumulate_rows(&blk.P[c], kBk, hd.dout + i0 * Dv, Dv, nr, is_live, dv_acc + c * Dv, Dv);
            accumulate_rows(&blk.dS[c], kBk, hd.q + i0 * Dh, Dh, nr, is_live, dk_acc + c * Dh, Dh);
          }
        }
      }
      for (int64_t c = 0; c < nc; ++c) {
        float* dk = hd.dk + (j0 + c) * Dh;
        for (int64_t d = 0; d < Dh; ++d) dk[d] = in.scale * dk_acc[c * Dh + d];
        std::memcpy(hd.dv + (j0 + c) * Dv, dv_acc + c * Dv, sizeof(float) * Dv);
      }
    }

    // Pass 2: dQ per block of query rows.
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_query_items; ++it) {
      const Item& w = query_items[it];
      const HeadLayout& L = pattern.head(w.h);
      const Head hd = head_of(in, out, Drow, w.b, w.h);
      const int64_t T = L.tile;
      const int64_t i0 = w.tile * T + w.sub * kBq;
      const int64_t nr = std::min({kBq, (w.tile + 1) * T - i0, Lq - i0});
      float* dq_acc = blk.acc_a.data();
      std::fill(dq_acc, dq_acc + nr * Dh, 0.0f);
      for (int64_t e = L.row_ptr[w.tile]; e < L.row_ptr[w.tile + 1]; ++e) {
        const int64_t kt = L.col[e];
        const bool full = L.is_full(e);
        for (int64_t j0 = kt * T; j0 < std::min((kt + 1) * T, Lk); j0 += kBk) {
          const int64_t nc = std::min({kBk, (kt + 1) * T - j0, Lk - j0});
          const int64_t r_tile = i0 - w.tile * T, c_tile = j0 - kt * T;
          blk.pack(hd, j0, nc);
          if (!blk.p_ds(hd, in.scale, i0, nr, j0, nc, full, [&](int64_t r, int64_t c) {
                return L.tile_allows(e, r_tile + r, c_tile + c);
              }))
            continue;
          // dq_r += Σ_c ds_rc k_c, c ascending (a masked c has ds = 0: adds nothing).
          for (int64_t r = 0; r < nr; ++r) {
            if (!blk.live[r]) continue;
            accumulate_rows(&blk.dS[r * kBk], 1, hd.k + j0 * Dh, Dh, nc,
                            [](int64_t) { return true; }, dq_acc + r * Dh, Dh);
          }
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        float* dq = hd.dq + (i0 + r) * Dh;
        for (int64_t d = 0; d < Dh; ++d) dq[d] = in.scale * dq_acc[r * Dh + d];
      }
    }
  }
}

}  // namespace sparseattn::cpu
