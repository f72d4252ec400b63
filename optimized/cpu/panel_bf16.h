// Key/value panels for the bf16 kernels (kernels_bf16.h): the bf16 twins of panel.h.
//
// Widening engine: pack_keys_widen() fills panel.h's float KeyPanel from bf16 keys
// (each bf16 becomes the float32 with the same top 16 bits: exact; V always packed, never
// read in place), so the float32 engine runs unchanged on them.
//
// Dot engine (avx512 build): KeyPanelBf16 keeps bf16, laid out for vdpbf16ps, which
// multiplies PAIRS of bf16 and adds both products into one float32 lane:
//   kb: [ldk / kStep][pairs][kStep][2]  K in blocks of kStep keys, paired along head_dim:
//        element (block, p, c, e) is k[block·kStep + c][2p + e]; 16 keys of one pair p are
//        one 512-bit vector (16 lanes × 2 bf16). The order the S = Q·Kᵀ micro-kernel
//        reads: a chunk starting on a block boundary is read in place, one starting
//        elsewhere is copied from two neighbouring blocks (Bf16Tile::step).
//   vp: [ldv / kStep][ldk / 2][kStep][2]  V paired along KEYS: element (x, m, c, e) is
//        v[2m + e][x·kStep + c]; 16 columns of one key pair are one vector. A chunk
//        starting on an even key reads it in place; one starting on an odd key re-pairs
//        (v[2m+1], v[2m+2]) from two neighbouring pairs by one vpermt2w per vector.
// pairs = head_dim rounded up to even, halved; the odd head dimension's partner, the
// columns past head_dim_v and the keys past num_keys (up to ldk) are zeros, so a zero
// product pads every pair. Cost: the same O(num_keys · head_dim) pass as panel.h, half the
// bytes; no per-chunk copy for chunks that start on a block (dense, block-sparse).
// Measured: not timed on its own; inside the bf16 entries' figures (docs/benchmarks.md,
// "Measured: the target points", the bf16 rows). History: optimized/cpu/TUNING.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/bfloat16.h"
#include "optimized/cpu/isa_target.h"
#include "optimized/cpu/panel.h"

SPARSEATTN_ISA_BEGIN

// Widens bf16 bits to float32 (exact).
inline float widen(uint16_t h) { return bfloat16_to_float(h); }

// pack_keys() of panel.h for bf16 keys and values: the float panel (K in blocks, V packed,
// panel.h) holds their exact float32 values.
template <class KeyAt>
void pack_keys_widen(const uint16_t* k, const uint16_t* v, int64_t head_dim,
                     int64_t head_dim_v, int64_t count, KeyAt key_at, KeyPanel& p) {
  init_panel(p, head_dim, head_dim_v, count, nullptr, /*in_order=*/false);  // V packed
  for (int64_t u0 = 0; u0 < p.ldk; u0 += kStep) {
    const int64_t nb = std::clamp<int64_t>(p.num_keys - u0, 0, kStep);
    float* block = p.kb.get() + u0 * p.head_dim;  // block u0 / kStep: [head_dim][kStep]
    for (int64_t d = 0; d < p.head_dim; ++d) {
      float* dst = block + d * kStep;
      for (int64_t c = 0; c < nb; ++c) dst[c] = widen(k[key_at(u0 + c) * head_dim + d]);
      std::fill(dst + nb, dst + kStep, 0.0f);
    }
    for (int64_t c = 0; c < kStep; ++c) {
      const uint16_t* vj = c < nb ? v + key_at(u0 + c) * head_dim_v : nullptr;
      for (int64_t d0 = 0; d0 < p.ldv; d0 += kStep) {
        float* dst = p.vb.get() + d0 * p.ldk + (u0 + c) * kStep;
        const int64_t n = vj == nullptr ? 0 : std::clamp<int64_t>(head_dim_v - d0, 0, kStep);
        for (int64_t i = 0; i < n; ++i) dst[i] = widen(vj[d0 + i]);
        std::fill(dst + n, dst + kStep, 0.0f);  // columns past head_dim_v, keys past num_keys
      }
    }
  }
}

struct KeyPanelBf16 {
  std::vector<uint16_t> kb;  // [ldk / kStep][pairs][kStep][2]
  std::vector<uint16_t> vp;  // [ldv / kStep][ldk / 2][kStep][2]
  int64_t num_keys = 0, ldk = 0, ldv = 0, head_dim = 0, pairs = 0, head_dim_v = 0;
};

// Packs keys key_at(u), u in [0, count), as pack_keys() does, into the bf16 layout above.
// ldk leaves kStep spare keys (zeros) so a micro-kernel may read a full step past any chunk.
template <class KeyAt>
void pack_keys_bf16(const uint16_t* k, const uint16_t* v, int64_t head_dim, int64_t head_dim_v,
                    int64_t count, KeyAt key_at, KeyPanelBf16& p) {
  p.num_keys = count;
  p.head_dim = head_dim;
  p.pairs = round_up(head_dim, 2) / 2;
  p.head_dim_v = head_dim_v;
  p.ldk = round_up(count, kStep) + kStep;
  p.ldv = round_up(head_dim_v, kStep);
  p.kb.assign(static_cast<size_t>(p.pairs * 2 * p.ldk), 0);
  p.vp.assign(static_cast<size_t>(p.ldv * p.ldk), 0);
  const int64_t whole_pairs = head_dim / 2;  // the last pair of an odd head_dim is padded
  const int64_t v_block = p.ldk / 2 * kStep * 2;  // one column block: every key pair
  for (int64_t u = 0; u < count; ++u) {
    const int64_t j = key_at(u);
    const uint16_t* kj = k + j * head_dim;
    // Key u's pairs in its block: a pair (k[2q], k[2q+1]) is 4 bytes in the row and in
    // the panel, moved as one 32-bit word.
    uint16_t* kdst = p.kb.data() + (u / kStep) * p.pairs * kStep * 2 + (u % kStep) * 2;
    for (int64_t q = 0; q < whole_pairs; ++q) std::memcpy(kdst + q * kStep * 2, kj + 2 * q, 4);
    if (head_dim % 2) kdst[whole_pairs * kStep * 2] = kj[head_dim - 1];
    // Value column d of key u: element u % 2 of pair u / 2, column block d / kStep.
    const uint16_t* vj = v + j * head_dim_v;
    uint16_t* vdst = p.vp.data() + (u / 2) * kStep * 2 + u % 2;
    for (int64_t d = 0; d < head_dim_v; ++d)
      vdst[(d / kStep) * v_block + (d % kStep) * 2] = vj[d];
  }
}

SPARSEATTN_ISA_END
