// kb02 — generic backward with dQ accumulated in fixed lanes: one pass over the tiles,
// float32, OpenMP + SIMD (FlashAttention-2 backward, Dao 2023, Alg. 2).
//
// Contract (grad_kernels.h): matches b1_dense_masked_grad within kTolFloat32 (atol 2e-5,
// rtol 2e-4, core/numerics.h) on dq, dk, dv; serves every pattern kind and key padding;
// bit-identical for any OpenMP thread count. Extra memory: kDqLanes · seq_len_q · head_dim
// floats per (batch, head) in flight, at most kLaneBudgetBytes at a time (at least one head).
// Grouped kv heads, softcap, ALiBi and sinks (contract §7.7) as in kb01 (grad_block.h), dsinks
// included; checked by tests/cpu/modern_grad_test.cpp.
//
// What changed since kb01: the second pass is gone. kb01 recomputed S, P, dP and dS in a
// query pass so that each dq row had a single owner; here the key pass also forms each
// block's contribution dS·K and adds it to a dQ accumulator — but not a shared one (FA2's
// atomics) nor one per thread (whose partition changes with the thread count): the key
// blocks of a (batch, head) are cut into kDqLanes contiguous ranges, FIXED whatever the
// number of threads. A lane is one work item: it walks its key blocks in ascending order,
// finishing their dk and dv as kb01 does and adding dq into its own [seq_len_q, head_dim]
// buffer; afterwards every row sums the lanes in lane order. Each dq element is therefore
// summed in an order that depends only on the layout: deterministic, no atomics.
// Why: 5 block products per tile pair (S, dP, dV, dK, dQ) instead of kb01's 7, and one exp
// instead of two — FlashAttention-2's count. The price: parallelism per (batch, head) is
// kDqLanes work items (enough for a few cores; more heads or batches add more), and the
// lane buffers.
// Measured: docs/backward.md, "Backward / forward time" (2026-11-30, 1 thread, shared
// machine), row "dense, cpu_kb02_generic_dq_lanes_grad (cpu_k06_generic_tiles)": backward /
// forward CPU time 3.18 at seq_len 2048 (compare kb01's row of the same run).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "optimized/cpu/grad_block.h"
#include "pattern/column_layout.h"

SPARSEATTN_ISA_BEGIN

using namespace grad;  // Block, Head, Item, accumulate_rows, kBq, kBk (grad_block.h)

namespace {
constexpr int64_t kDqLanes = 8;                    // dQ accumulators per (batch, head)
constexpr int64_t kLaneBudgetBytes = 256ll << 20;  // lane buffers in flight at once
}  // namespace

bool kb02_serves(const Pattern&) { return true; }

void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out) {
  kb02_generic_dq_lanes_grad(in, out, kLaneBudgetBytes);
}

void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out,
                                int64_t lane_budget_bytes) {
  const Pattern& pattern = *in.pattern;
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Lq = s.seq_len_q, Lk = s.seq_len_k;
  const int64_t Dh = s.head_dim, Dv = s.head_dim_v;

  const std::vector<float> Drow = row_deltas(in);  // D_i = <do_i, o_i>
  const KeyGrads kg = key_grads(in, out);  // dk, dv per query head when g > 1
  std::vector<ColumnLayout> columns(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) columns[h] = column_layout(pattern.head(h));

  // Key blocks in (batch, head, tile, block) order; those of pair bh are
  // [pair_start[bh], pair_start[bh + 1]).
  const std::vector<Item> key_items = block_items(pattern, B, /*keys=*/true);
  std::vector<int64_t> pair_start(static_cast<size_t>(B * H + 1), 0);
  for (const Item& w : key_items) ++pair_start[w.b * H + w.h + 1];
  for (int64_t bh = 0; bh < B * H; ++bh) pair_start[bh + 1] += pair_start[bh];

  // Waves of (batch, head) pairs whose lane buffers fit the budget (at least one pair).
  const int64_t lane_floats = Lq * Dh;
  const int64_t pairs_per_wave = std::max<int64_t>(
      1, lane_budget_bytes / (kDqLanes * lane_floats * static_cast<int64_t>(sizeof(float))));
  std::vector<float> lanes;

  for (int64_t first = 0; first < B * H; first += pairs_per_wave) {
    const int64_t pairs = std::min(pairs_per_wave, B * H - first);
    lanes.assign(static_cast<size_t>(pairs * kDqLanes * lane_floats), 0.0f);

#pragma omp parallel
    {
      Block blk(Dh, Dv);
      // Lane work items: (pair, lane), each its own dq buffer and its own key blocks.
#pragma omp for schedule(dynamic, 1)
      for (int64_t item = 0; item < pairs * kDqLanes; ++item) {
        const int64_t bh = first + item / kDqLanes, lane = item % kDqLanes;
        const int64_t n_blocks = pair_start[bh + 1] - pair_start[bh];
        const int64_t lo = pair_start[bh] + lane * n_blocks / kDqLanes;
        const int64_t hi = pair_start[bh] + (lane + 1) * n_blocks / kDqLanes;
        float* dq_lane = lanes.data() + item * lane_floats;
        for (int64_t it = lo; it < hi; ++it) {
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
              const uint8_t* live = blk.live.data();
              auto is_live = [live](int64_t r) { return live[r] != 0; };
              // dv_c += Σ_r p_rc do_r, dk_c += Σ_r ds_rc q_r (rows ascending), as in kb01.
              for (int64_t c = 0; c < nc; ++c) {
                accumulate_rows(&blk.P[c], kBk, hd.dout + i0 * Dv, Dv, nr, is_live, dv_acc + c * Dv, Dv);
                accumulate_rows(&blk.dS[c], kBk, hd.q + i0 * Dh, Dh, nr, is_live, dk_acc + c * Dh, Dh);
              }
              // The new step: dq_r += Σ_c ds_rc k_c into this lane's buffer (keys ascending).
              for (int64_t r = 0; r < nr; ++r) {
                if (!live[r]) continue;
                accumulate_rows(&blk.dS[r * kBk], 1, hd.k + j0 * Dh, Dh, nc,
                                [](int64_t) { return true; }, dq_lane + (i0 + r) * Dh, Dh);
              }
            }
          }
          for (int64_t c = 0; c < nc; ++c) {
            float* dk = hd.dk + (j0 + c) * Dh;
            for (int64_t d = 0; d < Dh; ++d) dk[d] = in.scale * dk_acc[c * Dh + d];
            std::memcpy(hd.dv + (j0 + c) * Dv, dv_acc + c * Dv, sizeof(float) * Dv);
          }
        }
      }

      // dq_i = scale · Σ_lane dq_lane[i], lanes in order (a row no lane touched stays 0).
#pragma omp for schedule(static)
      for (int64_t row = 0; row < pairs * Lq; ++row) {
        const int64_t pair = row / Lq, i = row % Lq;
        float* dq = out.dq + ((first + pair) * Lq + i) * Dh;
        const float* base = lanes.data() + (pair * kDqLanes) * lane_floats + i * Dh;
        for (int64_t d = 0; d < Dh; ++d) {
          float acc = 0.0f;
          for (int64_t g = 0; g < kDqLanes; ++g) acc += base[g * lane_floats + d];
          dq[d] = in.scale * acc;
        }
      }
    }
  }
  sum_groups(in, kg, out);  // g > 1: dk, dv of each kv head over its query heads
  sink_grads(in, Drow, out.dsinks);
}

SPARSEATTN_ISA_END
