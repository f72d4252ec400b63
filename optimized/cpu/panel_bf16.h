// Key/value panels for the bf16 kernels (kernels_bf16.h): the bf16 twins of panel.h.
//
// Widening engine: pack_keys_widen() fills panel.h's float KeyPanel from bf16 keys
// (each bf16 becomes the float32 with the same top 16 bits: exact), so the float32
// engine runs unchanged on them.
//
// Dot engine (avx512 build): KeyPanelBf16 keeps bf16, laid out for vdpbf16ps, which
// multiplies PAIRS of bf16 and adds both products into one float32 lane:
//   kt: [head_dim2 / 2][ldk][2]  K transposed by pairs of head-dimension elements: element
//                                (p, u, e) is k[u][2p + e]; 16 consecutive keys of one
//                                pair p are one 512-bit vector (16 lanes × 2 bf16).
//   v:  [num_keys][ldv]          V rows as in panel.h (ldv a multiple of kStep); they are
//                                paired along KEYS per chunk (flash_tile_bf16.h), because
//                                a chunk may start at an odd key.
// head_dim2 = head_dim rounded up to even; the odd head dimension's partner, the columns
// past head_dim_v and the keys past num_keys are zeros, so a zero product pads every pair.
// Cost: the same O(num_keys · head_dim) copy as panel.h, half the bytes.
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

// pack_keys() of panel.h for bf16 keys and values: the float panel holds their exact
// float32 values.
template <class KeyAt>
void pack_keys_widen(const uint16_t* k, const uint16_t* v, int64_t head_dim,
                     int64_t head_dim_v, int64_t count, KeyAt key_at, KeyPanel& p) {
  p.num_keys = count;
  p.head_dim = head_dim;
  p.head_dim_v = head_dim_v;
  p.ldk = round_up(count, kStep) + kStep;
  p.ldv = round_up(head_dim_v, kStep);
  p.kt.assign(static_cast<size_t>(head_dim * p.ldk), 0.0f);
  p.v.assign(static_cast<size_t>(count * p.ldv), 0.0f);
  for (int64_t u = 0; u < count; ++u) {
    const int64_t j = key_at(u);
    const uint16_t* kj = k + j * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) p.kt[d * p.ldk + u] = widen(kj[d]);
    const uint16_t* vj = v + j * head_dim_v;
    for (int64_t d = 0; d < head_dim_v; ++d) p.v[u * p.ldv + d] = widen(vj[d]);
  }
}

struct KeyPanelBf16 {
  std::vector<uint16_t> kt;  // [head_dim2 / 2][ldk][2]
  std::vector<uint16_t> v;   // [num_keys][ldv]
  int64_t num_keys = 0, ldk = 0, ldv = 0, head_dim = 0, head_dim2 = 0, head_dim_v = 0;
};

// Packs keys key_at(u), u in [0, count), as pack_keys() does, into the bf16 layout above.
// ldk leaves kStep spare keys so a micro-kernel may read a full step past any chunk.
template <class KeyAt>
void pack_keys_bf16(const uint16_t* k, const uint16_t* v, int64_t head_dim, int64_t head_dim_v,
                    int64_t count, KeyAt key_at, KeyPanelBf16& p) {
  p.num_keys = count;
  p.head_dim = head_dim;
  p.head_dim2 = round_up(head_dim, 2);
  p.head_dim_v = head_dim_v;
  p.ldk = round_up(count, kStep) + kStep;
  p.ldv = round_up(head_dim_v, kStep);
  p.kt.assign(static_cast<size_t>(p.head_dim2 * p.ldk), 0);
  p.v.assign(static_cast<size_t>(count * p.ldv), 0);
  const int64_t whole_pairs = head_dim / 2;  // the last pair of an odd head_dim is padded
  for (int64_t u = 0; u < count; ++u) {
    const int64_t j = key_at(u);
    const uint16_t* kj = k + j * head_dim;
    // A pair (k[2p], k[2p+1]) is 4 consecutive bytes in the row and in the panel: moved
    // as one 32-bit word.
    for (int64_t q = 0; q < whole_pairs; ++q)
      std::memcpy(&p.kt[(q * p.ldk + u) * 2], kj + 2 * q, 4);
    if (head_dim % 2) p.kt[(whole_pairs * p.ldk + u) * 2] = kj[head_dim - 1];
    const uint16_t* vj = v + j * head_dim_v;
    std::copy(vj, vj + head_dim_v, p.v.begin() + u * p.ldv);
  }
}

SPARSEATTN_ISA_END
