// Packed key/value panels: the layout the micro-kernels of flash_tile.h read.
//
// For one (batch, head) — or, for the dilated window, one residue class of it — the keys
// a kernel visits are copied once into
//   kb: [ldk / kStep][head_dim][kStep]  K in blocks of kStep keys, each block's head_dim
//        rows one after another (K transposed block by block): the order the QKᵀ
//        micro-kernel reads, so a chunk that starts on a block boundary (dense,
//        block-sparse layouts, most window spans) is read in place, and one that starts
//        elsewhere is copied from two neighbouring blocks (FlashTile::copy_chunk).
//        Transposing K lets S = Q Kᵀ broadcast one q element against kStep consecutive
//        keys (two vectors) instead of reducing a dot product across lanes.
// and V is read where P·V finds it: value column block x of panel key u at
//   v + x · v_block + u · v_row.
// When the panel holds every key in order and head_dim_v is a multiple of kStep, that is
// the caller's own [seq_len_k, head_dim_v] slice (v_row = head_dim_v, v_block = kStep): no
// copy at all. Otherwise V is packed into vb: [ldv / kStep][ldk][kStep] (v_row = kStep,
// v_block = ldk · kStep), zero-padded to ldv columns.
// Keys past num_keys, up to ldk, are zero: every micro-kernel runs whole vectors without a
// scalar tail. Cost: one O(num_keys · head_dim) pass per panel (the K transpose; and V when
// packed), against O(nnz · head_dim) attention work; it writes only what it needs (no
// zero-filled arrays beyond the padding: why, in optimized/cpu/TUNING.md).
// Measured: not timed on its own (docs/benchmarks.md, "What bounds a kernel: the note",
// its memory part, gives what the packing moves); it is inside every kernel's figure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "optimized/cpu/aligned.h"
#include "optimized/cpu/isa_target.h"

SPARSEATTN_ISA_BEGIN

#if defined(SPARSEATTN_ISA_AVX512)
inline constexpr int64_t kStep = 32;  // columns of one micro-kernel step: two 16-float vectors
#else
inline constexpr int64_t kStep = 16;  // columns of one micro-kernel step: two 8-float vectors
#endif

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct KeyPanel {
  AlignedFloatArray kb;  // [ldk / kStep][head_dim][kStep]
  AlignedFloatArray vb;  // [ldv / kStep][ldk][kStep] when V is packed, else empty
  const float* v = nullptr;     // where P·V reads V (see above)
  int64_t v_row = 0, v_block = 0;
  int64_t num_keys = 0, ldk = 0, ldv = 0, head_dim = 0, head_dim_v = 0;
};

// Sizes panel p for `count` keys and allocates it (nothing written yet: pack_block fills
// it). in_order: the panel's key u is the caller's key u for every u, so V may be read in
// place from `v` (the caller's [count, head_dim_v] slice) when head_dim_v is a multiple of
// kStep. ldk leaves kStep spare columns so a micro-kernel may read one full step past the
// last key of any chunk.
inline void init_panel(KeyPanel& p, int64_t head_dim, int64_t head_dim_v, int64_t count,
                       const float* v, bool in_order) {
  p.num_keys = count;
  p.head_dim = head_dim;
  p.head_dim_v = head_dim_v;
  p.ldk = round_up(count, kStep) + kStep;
  p.ldv = round_up(head_dim_v, kStep);
  p.kb.reset(aligned_floats(static_cast<size_t>(head_dim * p.ldk)));
  if (in_order && head_dim_v % kStep == 0) {
    p.vb.reset();
    p.v = v;
    p.v_row = head_dim_v;
    p.v_block = kStep;
    return;
  }
  p.vb.reset(aligned_floats(static_cast<size_t>(p.ldv * p.ldk)));
  p.v = p.vb.get();
  p.v_row = kStep;
  p.v_block = p.ldk * kStep;
}

// Packs the panel's block of keys [u0, u0 + kStep) (u0 a multiple of kStep, < ldk): key u
// is row key_at(u) of k ([.., head_dim]) and of v ([.., head_dim_v]); keys past num_keys
// are zeros. The block's kStep k rows (a few KiB, in L1) are transposed with contiguous
// writes. Blocks are independent: callers may pack them in parallel.
template <class KeyAt>
void pack_block(KeyPanel& p, const float* k, const float* v, KeyAt key_at, int64_t u0) {
  const int64_t nb = std::clamp<int64_t>(p.num_keys - u0, 0, kStep);
  const float* rows[kStep];
  for (int64_t c = 0; c < nb; ++c) rows[c] = k + key_at(u0 + c) * p.head_dim;
  float* block = p.kb.get() + u0 * p.head_dim;  // block u0 / kStep: [head_dim][kStep]
  for (int64_t d = 0; d < p.head_dim; ++d) {
    float* dst = block + d * kStep;
    for (int64_t c = 0; c < nb; ++c) dst[c] = rows[c][d];
    std::fill(dst + nb, dst + kStep, 0.0f);
  }
  if (!p.vb) return;  // V is read in place
  for (int64_t c = 0; c < kStep; ++c) {
    const float* vj = c < nb ? v + key_at(u0 + c) * p.head_dim_v : nullptr;
    for (int64_t d0 = 0; d0 < p.ldv; d0 += kStep) {
      float* dst = p.vb.get() + d0 * p.ldk + (u0 + c) * kStep;
      const int64_t n = vj == nullptr ? 0 : std::clamp<int64_t>(p.head_dim_v - d0, 0, kStep);
      if (n > 0) std::copy(vj + d0, vj + d0 + n, dst);
      std::fill(dst + n, dst + kStep, 0.0f);  // columns past head_dim_v, keys past num_keys
    }
  }
}

// Both steps for one panel, serially: keys key_at(u), u in [0, count).
template <class KeyAt>
void pack_keys(const float* k, const float* v, int64_t head_dim, int64_t head_dim_v,
               int64_t count, KeyAt key_at, KeyPanel& p) {
  init_panel(p, head_dim, head_dim_v, count, v, /*in_order=*/false);
  for (int64_t u0 = 0; u0 < p.ldk; u0 += kStep) pack_block(p, k, v, key_at, u0);
}

SPARSEATTN_ISA_END
