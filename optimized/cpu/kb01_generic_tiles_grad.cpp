// kb01 — generic backward over the canonical layout, float32, OpenMP + SIMD
// (FlashAttention-2 backward, Dao 2023, Alg. 2, made deterministic).
//
// Contract (grad_kernels.h): matches b1_dense_masked_grad within kTolFloat32 (atol 2e-5,
// rtol 2e-4, core/numerics.h) on dq, dk, dv; serves every pattern kind and key padding;
// bit-identical for any OpenMP thread count.
// Grouped kv heads, softcap, ALiBi and sinks (contract §7.7; grad_block.h: S through the
// forward's pipeline, dS times 1 − tanh², dk/dv per query head summed over the group in head
// order, dσ from the saved lse), dsinks included; checked by tests/cpu/modern_grad_test.cpp.
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
// The price: pass 2 recomputes S, P, dP and dS (7 block products per tile pair instead of
// FA2's 5), so the expected backward/forward ratio is about 3.5 rather than 2.5 (kb02
// removes the second pass).
// Per block (rows i, keys j), with D_i = <do_i, o_i> computed once per row:
//   S = scale·Q Kᵀ (masked: -inf),  P = exp(S − lse),  dP = dO Vᵀ,  dS = P ∘ (dP − D).
// A row with lse = -inf (fully masked, padded query) is skipped: its dq stays 0 and it adds
// nothing; a padded key's scores are -inf, so its P and dS are 0 and dk = dv = 0.
// Measured: docs/backward.md, "Backward / forward time" (2026-11-30, 1 thread, shared
// machine), row "dense, cpu_kb01_generic_tiles_grad (cpu_k06_generic_tiles)": backward /
// forward CPU time 4.35 at seq_len 2048. Earlier figures: optimized/cpu/TUNING.md.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "optimized/cpu/common.h"
#include "optimized/cpu/grad_kernels.h"
#include "optimized/cpu/grad_block.h"
#include "optimized/cpu/simd.h"
#include "pattern/column_layout.h"

SPARSEATTN_ISA_BEGIN

using namespace grad;  // Block, Head, Item, accumulate_rows, kBq, kBk (grad_block.h)

bool kb01_serves(const Pattern&) { return true; }

void kb01_generic_tiles_grad(const GradInputs& in, const GradOutputs& out) {
  const Pattern& pattern = *in.pattern;
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Lq = s.seq_len_q, Lk = s.seq_len_k;
  const int64_t Dh = s.head_dim, Dv = s.head_dim_v;

  const std::vector<float> Drow = row_deltas(in);  // D_i = <do_i, o_i>
  const KeyGrads kg = key_grads(in, out);  // dk, dv per query head when g > 1

  std::vector<ColumnLayout> columns(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) columns[h] = column_layout(pattern.head(h));

  // Work items of both passes, in a fixed order (the schedule may move them between
  // threads; each owns its output rows, so that changes no result).
  const std::vector<Item> key_items = block_items(pattern, B, /*keys=*/true);
  const std::vector<Item> query_items = block_items(pattern, B, /*keys=*/false);
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
      const Head hd = head_of(in, out, kg, Drow, w.b, w.h);
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
      const Head hd = head_of(in, out, kg, Drow, w.b, w.h);
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
  sum_groups(in, kg, out);  // g > 1: dk, dv of each kv head over its query heads
  sink_grads(in, Drow, out.dsinks);
}

SPARSEATTN_ISA_END
