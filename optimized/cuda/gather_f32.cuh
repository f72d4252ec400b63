// The gathered-rows block of c09 (decode) and c10 (selected): up to 32 query rows that read
// the SAME key rows — the g·L_q rows of one kv head in decode, the heads sharing one
// selection list in c10 — fed chunks of up to 32 key slots whose K and V rows the kernel
// names one by one (a page of the cache, a listed key). Each staged K/V row is read from
// global memory once for all the rows of the block.
//
// The online softmax is flash_f32.cuh's (FlashAttention, Dao et al. 2022, Alg. 1): 4 warps,
// 8 rows per warp, lane c scores slot c (a full dot product from shared memory), max and
// sum by shuffles, lane c accumulates o[d] for d = c, c + 32, …. Differences: the rows need
// not be one head's consecutive queries (the kernel hands each row's q pointer), the key
// rows are arbitrary (gathered), inputs float32 or bf16 (widened to float32 in shared
// memory), and a slot carries a weight w — 0 (not allowed), 1, or a listed key's
// multiplicity (contract §3.16, duplicates = count): l = Σ w·exp(s − m), o = Σ w·exp(s − m)·v.
// No sink here: c09 adds it once in its merge, c10 does not serve sinks.
// Preconditions: head_dim, head_dim_v in [1, 256] (the launchers check it).
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results").
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "optimized/cuda/flash_f32.cuh"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

__device__ inline float widen(float x) { return x; }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
class GatherF32Block {
 public:
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRows = 32;
  static constexpr int kSlots = 32;
  static constexpr int kRowsPerWarp = kRows / kWarps;
  static constexpr int kMaxHeadDim = 256;
  static constexpr int kDvPerLane = kMaxHeadDim / 32;

  __host__ __device__ static int64_t ldk(int64_t head_dim) { return head_dim | 1; }  // odd: no bank conflicts
  // Dynamic shared memory: the slots' row indices [kSlots] (int64), then Q [kRows][D],
  // K [kSlots][ldk], V [kSlots][Dv] floats.
  __host__ __device__ static size_t smem_bytes(int64_t head_dim, int64_t head_dim_v) {
    return sizeof(float) * static_cast<size_t>(kRows * head_dim + kSlots * ldk(head_dim) + kSlots * head_dim_v) +
           sizeof(int64_t) * kSlots;
  }

  // rows <= kRows; q_row(r) points at row r's head_dim elements of q (r < rows), scaled by
  // `scale` after the dot product as the flash blocks do.
  template <class QRow>
  __device__ GatherF32Block(unsigned char* smem, int64_t head_dim, int64_t head_dim_v, FastDiv div_d,
                            FastDiv div_dv, int rows, float scale, QRow q_row)
      : D_(static_cast<int>(head_dim)), Dv_(static_cast<int>(head_dim_v)), ldk_(static_cast<int>(ldk(head_dim))),
        rows_(rows), scale_(scale), div_d_(div_d), div_dv_(div_dv) {
    slot_row_ = reinterpret_cast<int64_t*>(smem);
    Qs_ = reinterpret_cast<float*>(smem + sizeof(int64_t) * kSlots);
    Ks_ = Qs_ + kRows * D_;
    Vs_ = Ks_ + kSlots * ldk_;
    warp_ = threadIdx.x / 32;
    lane_ = threadIdx.x % 32;
    for (int e = threadIdx.x; e < kRows * D_; e += kThreads) {
      const int r = static_cast<int>(fast_div(div_d_, e)), d = e - r * D_;
      Qs_[e] = r < rows_ ? widen(q_row(r)[d]) : 0.f;
    }
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      m_[rr] = -INFINITY;
      l_[rr] = 0.f;
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) o_[rr][t] = 0.f;
    }
  }

  // Stages `count` <= kSlots slots: slot c's K row is k + row_of(c)·head_dim, its V row
  // v + row_of(c)·head_dim_v. Every thread of the block calls it with the same arguments.
  template <class RowOf>
  __device__ void stage(int count, const T* k, const T* v, RowOf row_of) {
    __syncthreads();  // the previous chunk is no longer read
    if (threadIdx.x < count) slot_row_[threadIdx.x] = row_of(static_cast<int>(threadIdx.x));
    __syncthreads();
    for (int e = threadIdx.x; e < kSlots * D_; e += kThreads) {
      const int c = static_cast<int>(fast_div(div_d_, e)), d = e - c * D_;
      Ks_[c * ldk_ + d] = c < count ? widen(k[slot_row_[c] * D_ + d]) : 0.f;
    }
    for (int e = threadIdx.x; e < kSlots * Dv_; e += kThreads) {
      const int c = static_cast<int>(fast_div(div_dv_, e)), d = e - c * Dv_;
      Vs_[e] = c < count ? widen(v[slot_row_[c] * Dv_ + d]) : 0.f;
    }
    __syncthreads();  // K/V staged for every warp
  }

  // Folds the staged slots into the rows: weight(r, c) is slot c's weight for row r (0: not
  // allowed, never scored); mods(r, c, s) applies the score pipeline after the scale
  // (contract §2.8: softcap, then ALiBi) to an allowed pair.
  template <class Weight, class Mods>
  __device__ void visit(int count, Weight weight, Mods mods) {
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp_ * kRowsPerWarp + rr;
      if (r >= rows_) continue;  // warp-uniform
      const float w = lane_ < count ? weight(r, lane_) : 0.f;
      float s = -INFINITY;
      if (w > 0.f) {
        const float* qrow = Qs_ + r * D_;
        const float* krow = Ks_ + lane_ * ldk_;
        float dot = 0.f;
        for (int d = 0; d < D_; ++d) dot = fmaf(qrow[d], krow[d], dot);
        s = mods(r, lane_, scale_ * dot);
      }
      const float m_new = fmaxf(m_[rr], warp_max(s));
      if (m_new == -INFINITY) continue;  // nothing allowed yet in this row
      const float p = w > 0.f ? w * expf(s - m_new) : 0.f;
      const float alpha = expf(m_[rr] - m_new);  // 0 on the row's first allowed chunk
      l_[rr] = l_[rr] * alpha + warp_sum(p);
      m_[rr] = m_new;
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) o_[rr][t] *= alpha;
      for (int c = 0; c < count; ++c) {
        const float pc = __shfl_sync(0xffffffffu, p, c);
        if (pc == 0.f) continue;  // warp-uniform
#pragma unroll
        for (int t = 0; t < kDvPerLane; ++t) {
          const int d = lane_ + 32 * t;
          if (d < Dv_) o_[rr][t] = fmaf(pc, Vs_[c * Dv_ + d], o_[rr][t]);
        }
      }
    }
  }

  // o = o / l and lse = m + log l per row into o_row(r) [head_dim_v] and *lse_of(r); a row
  // with no allowed key gets o = 0, lse = −inf.
  template <class ORow, class LseOf>
  __device__ void finish(ORow o_row, LseOf lse_of) {
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp_ * kRowsPerWarp + rr;
      if (r >= rows_) continue;
      const bool empty = l_[rr] == 0.f;
      const float inv_l = empty ? 0.f : 1.f / l_[rr];
      float* o = o_row(r);
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) {
        const int d = lane_ + 32 * t;
        if (d < Dv_) o[d] = o_[rr][t] * inv_l;
      }
      if (lane_ == 0) *lse_of(r) = empty ? -INFINITY : m_[rr] + logf(l_[rr]);
    }
  }

 private:
  int D_, Dv_, ldk_, rows_;
  float scale_;
  FastDiv div_d_, div_dv_;
  float *Qs_, *Ks_, *Vs_;
  int64_t* slot_row_;
  int warp_, lane_;
  float m_[kRowsPerWarp], l_[kRowsPerWarp];
  float o_[kRowsPerWarp][kDvPerLane];
};

}  // namespace cuda
}  // namespace sparseattn
