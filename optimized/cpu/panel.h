// Packed key/value panels: the layout the micro-kernels of flash_tile.h read.
//
// For one (batch, head) — or, for the dilated window, one residue class of it — the keys
// a kernel visits are copied once into
//   kt: [head_dim][ldk]            K transposed: a row per head-dimension element, a
//                                  column per key;
//   kb: [ldk / kStep][head_dim][kStep]  the same keys in blocks of kStep, each block's
//                                  head_dim rows one after another: the order the QKᵀ
//                                  micro-kernel reads, so a chunk that starts on a block
//                                  boundary (dense, block-sparse layouts) is read in place;
//                                  chunks starting elsewhere (window spans) are copied
//                                  from kt;
//   v:  [ldv / kStep][ldk][kStep]  V in column blocks: for each block of kStep value
//                                  columns, the keys' kStep values one after another,
// with head_dim_v padded to ldv, a multiple of kStep (16 or 32), and zeros past the last
// key. Transposing K lets S = Q Kᵀ broadcast one q element against kStep consecutive keys
// (two vectors) instead of reducing a dot product across lanes. V's column blocks are the
// order P·V reads (flash_tile.h pv_rows: key after key, kStep columns each), for a chunk
// starting at any key: the micro-kernel reads the panel in place, no per-chunk copy.
// The padding lets every micro-kernel run whole vectors without a scalar tail. Cost: one
// O(num_keys · head_dim) copy per panel, against O(nnz · head_dim) attention work.
#pragma once

#include <cstdint>
#include <vector>

#include "optimized/cpu/isa_target.h"

SPARSEATTN_ISA_BEGIN

#if defined(SPARSEATTN_ISA_AVX512)
inline constexpr int64_t kStep = 32;  // columns of one micro-kernel step: two 16-float vectors
#else
inline constexpr int64_t kStep = 16;  // columns of one micro-kernel step: two 8-float vectors
#endif

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct KeyPanel {
  std::vector<float> kt;  // [head_dim][ldk]
  std::vector<float> kb;  // [ldk / kStep][head_dim][kStep]
  std::vector<float> v;   // [ldv / kStep][ldk][kStep]
  int64_t num_keys = 0, ldk = 0, ldv = 0, head_dim = 0, head_dim_v = 0;
};

// Packs keys key_at(u), u in [0, count): k rows of `head_dim` floats, v rows of
// `head_dim_v` floats, both contiguous per token (a [seq_len, dim] slice of a
// [batch, heads, seq_len, dim] tensor). ldk leaves kStep spare columns so a micro-kernel
// may read one full step past the last key of any chunk.
template <class KeyAt>
void pack_keys(const float* k, const float* v, int64_t head_dim, int64_t head_dim_v,
               int64_t count, KeyAt key_at, KeyPanel& p) {
  p.num_keys = count;
  p.head_dim = head_dim;
  p.head_dim_v = head_dim_v;
  p.ldk = round_up(count, kStep) + kStep;
  p.ldv = round_up(head_dim_v, kStep);
  p.kt.assign(static_cast<size_t>(head_dim * p.ldk), 0.0f);
  p.kb.assign(static_cast<size_t>(head_dim * p.ldk), 0.0f);
  p.v.assign(static_cast<size_t>(p.ldv * p.ldk), 0.0f);
  for (int64_t u = 0; u < count; ++u) {
    const int64_t j = key_at(u);
    const float* kj = k + j * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) {
      p.kt[d * p.ldk + u] = kj[d];
      p.kb[(u / kStep * head_dim + d) * kStep + u % kStep] = kj[d];
    }
    const float* vj = v + j * head_dim_v;
    for (int64_t d = 0; d < head_dim_v; ++d)
      p.v[(d / kStep) * p.ldk * kStep + u * kStep + d % kStep] = vj[d];
  }
}

SPARSEATTN_ISA_END
