// The walk over a HeadLayout's tiles that k05 and k06 share: for one block of query rows,
// feed the FlashTile every key the layout lists for their query tile, in ascending key
// order (the layout's column order, so a row's reduction order is fixed).
//
// A layout tile is (query tile qt, key tile kt) of `tile` tokens per side; full tiles need
// no mask, partial tiles carry a bitmask row per query (layout.h). A tile wider than kBc is
// cut into pieces of at most kBc keys. With `coalesce`, consecutive pieces whose keys are
// adjacent are merged into one chunk of up to kBc keys, so layouts with small tiles (the
// token-level patterns' default 64, or 16, 8) still give the micro-kernels full chunks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "optimized/cpu/common.h"
#include "pattern/layout.h"

SPARSEATTN_ISA_BEGIN

// Keys [j0, j0 + n) of layout entry `entry`, all inside one key tile.
struct Piece {
  int64_t entry, j0, n;
};

// Feeds tile `t` (already begun with `rows` queries starting at row `r_in_tile` of query
// tile `qt`) every listed key of qt. `pieces` is the caller's scratch. Panel and Tile: an
// engine's (common.h, flash_tile_bf16.h).
template <class Panel, class Tile>
void walk_layout_row(const HeadLayout& layout, int64_t qt, int64_t r_in_tile, const Panel& panel,
                     const uint8_t* key_valid, bool coalesce, std::vector<Piece>& pieces, Tile& t) {
  const int64_t T = layout.tile;
  const int64_t words = layout.words_per_row();
  pieces.clear();
  for (int64_t e = layout.row_ptr[qt]; e < layout.row_ptr[qt + 1]; ++e) {
    const int64_t k_begin = layout.col[e] * T;
    const int64_t k_end = std::min(k_begin + T, layout.seq_len_k);
    for (int64_t j0 = k_begin; j0 < k_end; j0 += kBc)
      pieces.push_back({e, j0, std::min(kBc, k_end - j0)});
  }
  size_t p = 0;
  while (p < pieces.size()) {
    // The chunk: pieces [p, q), adjacent keys, at most kBc of them.
    size_t q = p + 1;
    int64_t nc = pieces[p].n;
    while (coalesce && q < pieces.size() && pieces[q].j0 == pieces[p].j0 + nc &&
           nc + pieces[q].n <= kBc)
      nc += pieces[q++].n;
    const int64_t j0 = pieces[p].j0;
    bool all_full = key_valid == nullptr;
    for (size_t x = p; x < q; ++x) all_full = all_full && layout.is_full(pieces[x].entry);
    if (all_full) {
      t.step(panel, j0, nc, NoMask{});
    } else {
      t.step(panel, j0, nc, [&](int64_t r, float* sc) {
        for (size_t x = p; x < q; ++x) {
          const Piece& pc = pieces[x];
          if (layout.is_full(pc.entry)) continue;
          // Bit c of the row's words is key (kt·T + c) of this tile.
          const uint64_t* row_bits =
              layout.bits.data() + layout.bits_at[pc.entry] + (r_in_tile + r) * words;
          const int64_t c_tile = pc.j0 - layout.col[pc.entry] * T;  // piece's first column
          float* out = sc + (pc.j0 - j0);
          for (int64_t c = 0; c < pc.n; ++c) {
            const int64_t bit = c_tile + c;
            if (!((row_bits[bit / 64] >> (bit % 64)) & 1u)) out[c] = kNegInf;
          }
        }
        mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return j0 + c; });
      });
    }
    p = q;
  }
}

// Runs a layout-walking kernel over every (batch, head, query tile, block of kBr rows).
template <class Engine, class In>
void run_layout_kernel(const In& in, const Outputs& out, bool coalesce) {
  const Pattern& pattern = *in.pattern;
  const AttentionShape& s = in.shape;
  const auto panels = pack_all_keys<Engine>(in);
  // Heads may have different tiles (per-head patterns mixing block sizes): item counts
  // per head, as a prefix sum. A tile taller than kBr is split into blocks of kBr rows.
  auto blocks_per_tile = [&](int64_t h) { return (pattern.head(h).tile + kBr - 1) / kBr; };
  std::vector<int64_t> head_start(static_cast<size_t>(s.num_heads + 1), 0);
  for (int64_t h = 0; h < s.num_heads; ++h)
    head_start[h + 1] = head_start[h] + pattern.head(h).num_q_tiles() * blocks_per_tile(h);
  const int64_t items_per_b = head_start[s.num_heads];

#pragma omp parallel
  {
    typename Engine::Tile t(s.head_dim, s.head_dim_v);
    std::vector<Piece> pieces;
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < s.batch * items_per_b; ++item) {
      const int64_t b = item / items_per_b, local = item % items_per_b;
      const int64_t h =
          std::upper_bound(head_start.begin(), head_start.end(), local) - head_start.begin() - 1;
      const int64_t T = pattern.head(h).tile;
      const int64_t qt = (local - head_start[h]) / blocks_per_tile(h);
      const int64_t r_in_tile = ((local - head_start[h]) % blocks_per_tile(h)) * kBr;
      const int64_t i0 = qt * T + r_in_tile;
      const int64_t rows = std::min({kBr, T - r_in_tile, s.seq_len_q - i0});
      if (rows <= 0) continue;
      const auto hv = head_view(in, out, b, h);
      t.begin(rows, [&](int64_t r) { return hv.q + (i0 + r) * s.head_dim; }, in.scale,
              tile_mods(in.mods, s, b, h, i0));
      walk_layout_row(pattern.head(h), qt, r_in_tile, panels[kv_index(s, b, h)],
                      key_padding_row(pattern, b),
                      coalesce, pieces, t);
      t.finish([&](int64_t r, const float* o_row, float lse) {
        write_row(hv, pattern, b, i0 + r, s.head_dim_v, o_row, lse);
      });
    }
  }
}

SPARSEATTN_ISA_END
