// Plumbing shared by the k0* kernels: per-head panels, key padding, the OpenMP loop over
// work items and the output rows. Nothing here knows a pattern; the kernels do.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/flash_tile.h"
#include "optimized/cpu/kernels.h"
#include "optimized/cpu/panel.h"

SPARSEATTN_ISA_BEGIN

// Throws the error every kernel gives for a pattern it does not serve.
inline void require_served(bool served, const Pattern& pattern, const char* kernel,
                           const char* serves) {
  if (!served)
    throw InvalidArgument("pattern", describe(pattern.spec),
                          std::string(kernel) + " serves " + serves);
}

// Pointers to the (batch b, head h) slices of the inputs (element T: float, or bf16 bits)
// and outputs.
template <class T>
struct HeadView {
  const T* q;
  const T* k;
  const T* v;
  float* o;
  float* lse;
};
// The index b·H_kv + h / g of query head h's kv head (contract §2.7: repeat_interleave):
// the slice of k and v it reads, and its panel in pack_all_keys' list.
inline int64_t kv_index(const AttentionShape& s, int64_t b, int64_t h) {
  return b * s.num_kv_heads + h / s.group();
}

// In: Inputs or InputsBf16. k and v: the kv head query head h reads (kv_index).
template <class In>
inline auto head_view(const In& in, const Outputs& out, int64_t b, int64_t h) {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(in.q)>>;
  const AttentionShape& s = in.shape;
  const int64_t bh = b * s.num_heads + h, bkv = kv_index(s, b, h);
  return HeadView<T>{in.q + bh * s.seq_len_q * s.head_dim, in.k + bkv * s.seq_len_k * s.head_dim,
          in.v + bkv * s.seq_len_k * s.head_dim_v, out.o + bh * s.seq_len_q * s.head_dim_v,
          out.lse + bh * s.seq_len_q};
}

// The modifiers of the tile whose row 0 is query i0 of head h, batch b (the rows after it
// consecutive queries): float32 softcap, a[b, h], σ_h, and p = i0 + L_k − L_q (contract
// §3.1, the position ALiBi measures from).
inline TileMods tile_mods(const Mods& m, const AttentionShape& s, int64_t b, int64_t h,
                          int64_t i0) {
  TileMods t;
  t.softcap = m.softcap;
  if (m.slopes != nullptr) {
    t.alibi = true;
    t.slope = m.slopes[b * m.slopes_batch_stride + h];
  }
  if (m.sinks != nullptr) t.sink = m.sinks[h];
  t.q_pos = i0 + s.seq_len_k - s.seq_len_q;
  return t;
}

// Row b of the key padding mask [batch, seq_len_k] (nonzero = real token), or nullptr.
inline const uint8_t* key_padding_row(const Pattern& pattern, int64_t b) {
  if (!pattern.has_key_padding()) return nullptr;
  return pattern.spec.key_padding_mask->data.data() + b * pattern.sizes.seq_len_k;
}

// One panel per (batch, kv head) holding every key in order: [batch * num_kv_heads],
// indexed by kv_index(). Packed once before any tile runs, so the g query heads of a kv
// head (contract §2.7) share one panel instead of packing it g times. The blocks are packed
// in parallel, so one long head uses every thread too.
inline std::vector<KeyPanel> pack_all_keys_float32(const Inputs& in) {
  const AttentionShape& s = in.shape;
  const int64_t n = s.batch * s.num_kv_heads;
  std::vector<KeyPanel> panels(static_cast<size_t>(n));
  for (int64_t bkv = 0; bkv < n; ++bkv)
    init_panel(panels[bkv], s.head_dim, s.head_dim_v, s.seq_len_k,
               in.v + bkv * s.seq_len_k * s.head_dim_v, /*in_order=*/true);
  const int64_t blocks = panels.empty() ? 0 : panels[0].ldk / kStep;
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < n * blocks; ++item) {
    const int64_t bkv = item / blocks;
    pack_block(panels[bkv], in.k + bkv * s.seq_len_k * s.head_dim,
               in.v + bkv * s.seq_len_k * s.head_dim_v, [](int64_t u) { return u; },
               item % blocks * kStep);
  }
  return panels;
}

// The engine a kernel body runs (k01 … k06 are templates over it): the element type of
// q, k, v, the tile, the key panel and its packers (one panel per kv head, every key).
// This one is the float32 ladder's; flash_tile_bf16.h has the bf16 ones (kernels_bf16.h).
struct Float32Engine {
  using Elem = float;
  using Tile = FlashTile;
  using Panel = KeyPanel;
  template <class KeyAt>
  static void pack(const float* k, const float* v, int64_t head_dim, int64_t head_dim_v,
                   int64_t count, KeyAt key_at, Panel& p) {
    pack_keys(k, v, head_dim, head_dim_v, count, key_at, p);
  }
  static std::vector<Panel> pack_all(const Inputs& in) { return pack_all_keys_float32(in); }
};

// One panel per (batch, kv head) holding every key in order, for any engine.
template <class Engine, class In>
std::vector<typename Engine::Panel> pack_all_keys(const In& in) {
  return Engine::pack_all(in);
}

// Runs work(item, tile) for item in [0, num_items) on the OpenMP team, one Engine::Tile
// per thread. Items are independent (each owns its output rows), so the schedule only
// moves work between threads, never changes a row's arithmetic.
template <class Engine, class In, class Work>
void parallel_tiles(const In& in, int64_t num_items, Work&& work) {
#pragma omp parallel
  {
    typename Engine::Tile tile(in.shape.head_dim, in.shape.head_dim_v);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < num_items; ++item) work(item, tile);
  }
}

// Writes one finished row (o: head_dim_v floats) unless the query is padding, in which
// case the row is fully masked (contract §2): o = 0, lse = -inf.
template <class HV>
inline void write_row(const HV& hv, const Pattern& pattern, int64_t b, int64_t i,
                      int64_t head_dim_v, const float* o_row, float lse) {
  float* o = hv.o + i * head_dim_v;
  if (pattern.has_key_padding() && !pattern.query_valid(b, i)) {
    std::fill(o, o + head_dim_v, 0.0f);
    hv.lse[i] = kNegInf;
    return;
  }
  std::copy(o_row, o_row + head_dim_v, o);
  hv.lse[i] = lse;
}

// s[c] = -inf for the columns c in [0, nc) outside [lo, hi] (either may lie outside the
// chunk): a row whose allowed keys in the chunk are one contiguous range.
inline void mask_outside(float* s, int64_t nc, int64_t lo, int64_t hi) {
  std::fill(s, s + std::clamp<int64_t>(lo, 0, nc), kNegInf);
  std::fill(s + std::clamp<int64_t>(hi + 1, 0, nc), s + nc, kNegInf);
}

// s[c] = -inf for the padded keys of a chunk: key_of(c) is the key index of column c.
template <class KeyOf>
inline void mask_padded_keys(const uint8_t* key_valid, float* s, int64_t nc, KeyOf key_of) {
  if (key_valid == nullptr) return;
  for (int64_t c = 0; c < nc; ++c)
    if (!key_valid[key_of(c)]) s[c] = kNegInf;
}

SPARSEATTN_ISA_END
