// The float32 flash block (c03, and the float32 forms of c05..c08): one thread block
// owns a set of query rows, keeps their running max m, running sum l and unnormalized
// output o in registers, and is fed key chunks by the kernel that owns it — which
// chunks, and which (query, key) pairs inside them are allowed, is the kernel's (the
// pattern's) business; the online softmax is this file's (FlashAttention, Dao et al.
// 2022, Alg. 1, lines 8-12; Milakov & Gimelshein 2018 for the running max).
//
// Work split: 4 warps, Br = 32 rows (8 per warp), Bc = 32 keys per chunk. For a row,
// lane c scores key c of the chunk (a full dot product over head_dim from shared
// memory), the warp reduces max and sum with shuffles, then lane c accumulates
// o[d] for d = c, c+32, ... (head_dim_v <= 256: 8 registers per row).
// Preconditions: head_dim, head_dim_v in [1, 256] (checked by the launcher).
// The attention of current models (contract §2.7-§2.9), for the kernels whose registry
// entry lists it (c03 and the float32 forms of c05..c08): K/V rows come from kv head h / group; each allowed score goes
// through the pipeline (scale, softcap c·tanh(s/c), ALiBi −a·|p − j|) before the online
// softmax; a sink starts each real row at m = σ, l = 1 (exp(σ − m) = 1), so it is in every
// rescaling, in lse, and a row without keys ends with o = 0, lse = σ. A split-K part
// (block_sparse.cuh) starts without it (with_sink = false): the merge adds it once.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"): c03 and the
// float32 forms of c05..c08 run this block. History: optimized/cuda/TUNING.md.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

#include "optimized/cuda/kernel_args.h"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

__device__ inline float warp_max(float x) {
  for (int d = 16; d > 0; d /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, d));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int d = 16; d > 0; d /= 2) x += __shfl_xor_sync(0xffffffffu, x, d);
  return x;
}

class FlashF32Block {
 public:
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBr = 32;
  static constexpr int kBc = 32;  // one key per lane
  static constexpr int kRowsPerWarp = kBr / kWarps;
  static constexpr int kMaxHeadDim = 256;
  static constexpr int kDvPerLane = kMaxHeadDim / 32;

  // Row stride of the K chunk in shared memory: odd, so lane c reading K[c][d] hits
  // bank (c * ldk + d) % 32 — 32 different banks.
  __host__ __device__ static int64_t ldk(int64_t head_dim) { return head_dim | 1; }
  // Dynamic shared memory: Q [Br][D], K [Bc][ldk], V [Bc][Dv] floats.
  __host__ __device__ static size_t smem_bytes(int64_t head_dim, int64_t head_dim_v) {
    return sizeof(float) * static_cast<size_t>(kBr * head_dim + kBc * ldk(head_dim) + kBc * head_dim_v);
  }

  // Loads the block's query rows (rows.count <= kBr) of head (b, h) into shared memory.
  // with_sink = false: the block is one part of a split-K row set, whose merge adds the
  // sink once (block_sparse.cuh: split_merge_kernel); every other caller keeps the default.
  __device__ FlashF32Block(const AttnArgs& a, unsigned char* smem, int64_t b, int64_t h, Strided rows,
                           bool with_sink = true)
      : a_(a), b_(b), h_(h), rows_(rows), D_(a.head_dim), Dv_(a.head_dim_v), ldk_(ldk(a.head_dim)) {
    Qs_ = reinterpret_cast<float*>(smem);
    Ks_ = Qs_ + kBr * D_;
    Vs_ = Ks_ + kBc * ldk_;
    warp_ = threadIdx.x / 32;
    lane_ = threadIdx.x % 32;
    const float* q = static_cast<const float*>(a.q);
    const int D = static_cast<int>(D_);
    for (int e = threadIdx.x; e < kBr * D; e += kThreads) {  // (row, column) by FastDiv
      const int r = static_cast<int>(fast_div(a.div_d, e)), d = e - r * D;
      Qs_[e] = r < rows_.count ? q[a.offset(b, h, a.seq_len_q, rows_.at(r), D_) + d] : 0.f;
    }
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      m_[rr] = -INFINITY;
      l_[rr] = 0.f;
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) o_[rr][t] = 0.f;
      const int r = warp_ * kRowsPerWarp + rr;
      if (with_sink && a.sinks != nullptr && r < rows_.count && a.query_real(b, rows_.at(r))) {
        m_[rr] = a.sinks[h];  // the sink's logit: exp(σ - m) = 1 in l (contract §2.9)
        l_[rr] = 1.f;
      }
    }
  }

  // One chunk of keys (keys.count <= kBc). allowed(i, j) is the pattern's predicate, not
  // evaluated when `full` (every pair of the chunk allowed by the pattern); key padding is
  // applied here. Every thread of the block must call visit() with the same arguments.
  template <class Allowed>
  __device__ void visit(Strided keys, Allowed allowed, bool full = false) {
    const float* k = static_cast<const float*>(a_.k);
    const float* v = static_cast<const float*>(a_.v);
    const int D = static_cast<int>(D_), Dv = static_cast<int>(Dv_), ldk = static_cast<int>(ldk_);
    __syncthreads();  // the previous chunk's K/V are no longer read
    for (int e = threadIdx.x; e < kBc * D; e += kThreads) {
      const int c = static_cast<int>(fast_div(a_.div_d, e)), d = e - c * D;
      Ks_[c * ldk + d] = c < keys.count ? k[a_.kv_offset(b_, h_, a_.seq_len_k, keys.at(c), D_) + d] : 0.f;
    }
    for (int e = threadIdx.x; e < kBc * Dv; e += kThreads) {
      const int c = static_cast<int>(fast_div(a_.div_dv, e)), d = e - c * Dv;
      Vs_[e] = c < keys.count ? v[a_.kv_offset(b_, h_, a_.seq_len_k, keys.at(c), Dv_) + d] : 0.f;
    }
    __syncthreads();  // K/V staged for every warp

#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp_ * kRowsPerWarp + rr;
      if (r >= rows_.count) continue;  // warp-uniform
      const int64_t i = rows_.at(r);
      const int64_t j = keys.at(lane_);
      float s = -INFINITY;
      if (lane_ < keys.count && (full || allowed(i, j)) &&
          padding_allows(a_.key_valid, a_.seq_len_q, a_.seq_len_k, b_, i, j)) {
        const float* qrow = Qs_ + r * D_;
        const float* krow = Ks_ + lane_ * ldk_;
        float dot = 0.f;
        for (int64_t d = 0; d < D_; ++d) dot = fmaf(qrow[d], krow[d], dot);
        s = a_.scale * dot;
        // contract §2.8: softcap, then ALiBi, on the allowed pair only.
        if (a_.softcap > 0.f) s = a_.softcap * tanhf(s / a_.softcap);
        if (a_.alibi != nullptr) {
          const float slope = a_.slope(b_, h_);
          const int64_t p = i + a_.seq_len_k - a_.seq_len_q;
          s -= slope * static_cast<float>(p > j ? p - j : j - p);
        }
      }
      const float m_new = fmaxf(m_[rr], warp_max(s));
      if (m_new == -INFINITY) continue;  // nothing allowed yet in this row: state unchanged
      // exp(-inf) = 0: masked keys add nothing; alpha = 0 on the row's first allowed chunk.
      const float p = expf(s - m_new);
      const float alpha = expf(m_[rr] - m_new);
      l_[rr] = l_[rr] * alpha + warp_sum(p);
      m_[rr] = m_new;
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) o_[rr][t] *= alpha;
      for (int c = 0; c < keys.count; ++c) {
        const float pc = __shfl_sync(0xffffffffu, p, c);
        if (pc == 0.f) continue;  // warp-uniform: masked key
#pragma unroll
        for (int t = 0; t < kDvPerLane; ++t) {
          const int64_t d = lane_ + 32 * t;
          if (d < Dv_) o_[rr][t] = fmaf(pc, Vs_[c * Dv_ + d], o_[rr][t]);
        }
      }
    }
  }

  // o = o / l and lse = m + log l; a row with no allowed key gets o = 0, lse = -inf (with a
  // sink: lse = σ, l = 1 from the constructor). Into
  // a.o / a.lse, or for a split-K part into its workspace rows: o_rows [row - first_row][Dv],
  // lse_rows [row - first_row].
  __device__ void finish(float* o_rows = nullptr, float* lse_rows = nullptr, int64_t first_row = 0) {
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp_ * kRowsPerWarp + rr;
      if (r >= rows_.count) continue;
      const int64_t i = rows_.at(r);
      const bool empty = l_[rr] == 0.f;
      const float inv_l = empty ? 0.f : 1.f / l_[rr];
      float* o = o_rows != nullptr ? o_rows + (i - first_row) * Dv_ : a_.o + a_.offset(b_, h_, a_.seq_len_q, i, Dv_);
#pragma unroll
      for (int t = 0; t < kDvPerLane; ++t) {
        const int64_t d = lane_ + 32 * t;
        if (d < Dv_) o[d] = o_[rr][t] * inv_l;
      }
      float* lse = lse_rows != nullptr ? lse_rows + (i - first_row) : a_.lse + (b_ * a_.num_heads + h_) * a_.seq_len_q + i;
      if (lane_ == 0) *lse = empty ? -INFINITY : m_[rr] + logf(l_[rr]);
    }
  }

 private:
  const AttnArgs& a_;
  int64_t b_, h_;
  Strided rows_;
  int64_t D_, Dv_, ldk_;
  float *Qs_, *Ks_, *Vs_;
  int warp_, lane_;
  float m_[kRowsPerWarp], l_[kRowsPerWarp];
  float o_[kRowsPerWarp][kDvPerLane];
};

}  // namespace cuda
}  // namespace sparseattn
