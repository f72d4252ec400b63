// The half-precision flash block (c04, and the bf16 forms of c05..c08): the same online
// softmax as flash_f32.cuh, with both matrix products on tensor cores through WMMA
// (16x16x16 fragments; fp16 or bf16 inputs, float32 accumulation), as FlashAttention-2
// does with mma.sync (Dao 2023, §3.1). What changes from the float32 block:
//   S = Q Kᵀ and O += P V are warp-level matrix products; the scores S and the
//   unnormalized output O live in shared memory in float32 (WMMA does not say which
//   lane holds which accumulator element, so the per-row rescaling by
//   alpha = exp(m_old - m_new) is done on the shared copy); P is rounded to T before
//   P V — the rounding kTolFloat16 / kTolBfloat16 budget for (core/numerics.h).
// Work split: 4 warps, Br = 64 rows (16 per warp: one fragment row), Bc = 64 keys.
// Each warp touches only its own 16 rows of Q, S, P and O, so only the K/V staging
// needs block-wide barriers. head_dim and head_dim_v are zero-padded to multiples of 16
// (zeros add nothing to a dot product). Preconditions: head_dim, head_dim_v in [1, 256]
// and the shared memory below available on the device (checked by the launcher).
// The attention of current models (contract §2.7-§2.9), as in flash_f32.cuh: K/V rows of kv
// head h / group; the softcap and ALiBi on each allowed scaled score before the online
// softmax (float32, on the shared S copy); a sink starts a real row at m = σ, l = 1.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"): c04 and the
// bf16 forms of c05..c08 run this block. History: optimized/cuda/TUNING.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>

#include "optimized/cuda/kernel_args.h"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

template <class T>
__device__ inline T to_input(float x);
template <>
__device__ inline __half to_input<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ inline __nv_bfloat16 to_input<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <class T>
class FlashMmaBlock {
 public:
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBr = 16 * kWarps;
  static constexpr int kBc = 64;
  static constexpr int kMaxHeadDim = 256;

  __host__ __device__ static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }
  // Leading dimensions: +8 T (16 bytes) / +4 floats skew rows across banks while keeping
  // every fragment pointer 32-byte aligned, as WMMA requires. The float strides (kLdS = 68,
  // ld_acc = pad16(Dv) + 4) are 4 x odd words mod 32, which pair_column (tiling.h) needs
  // for its conflict-free order.
  __host__ __device__ static int64_t ld_in(int64_t d) { return pad16(d) + 8; }
  __host__ __device__ static int64_t ld_acc(int64_t d) { return pad16(d) + 4; }
  static constexpr int64_t kLdS = kBc + 4;
  static constexpr int64_t kLdP = kBc + 8;

  // Dynamic shared memory: Q [Br][ld_in(D)], K [Bc][ld_in(D)], V [Bc][ld_in(Dv)] and
  // P [Br][kLdP] in T; S [Br][kLdS] and O [Br][ld_acc(Dv)] in float.
  __host__ __device__ static size_t smem_bytes(int64_t head_dim, int64_t head_dim_v) {
    return sizeof(T) * static_cast<size_t>((kBr + kBc) * ld_in(head_dim) + kBc * ld_in(head_dim_v) + kBr * kLdP) +
           sizeof(float) * static_cast<size_t>(kBr * kLdS + kBr * ld_acc(head_dim_v));
  }

  // with_sink = false: one part of a split-K row set, whose merge adds the sink once
  // (block_sparse.cuh: split_merge_kernel); every other caller keeps the default.
  __device__ FlashMmaBlock(const AttnArgs& a, unsigned char* smem, int64_t b, int64_t h, Strided rows,
                           bool with_sink = true)
      : a_(a), b_(b), h_(h), rows_(rows), D_(static_cast<int>(a.head_dim)), Dv_(static_cast<int>(a.head_dim_v)) {
    ldq_ = static_cast<int>(ld_in(D_));
    ldv_ = static_cast<int>(ld_in(Dv_));
    ldo_ = static_cast<int>(ld_acc(Dv_));
    Qs_ = reinterpret_cast<T*>(smem);
    Ks_ = Qs_ + kBr * ldq_;
    Vs_ = Ks_ + kBc * ldq_;
    Ps_ = Vs_ + kBc * ldv_;
    Ss_ = reinterpret_cast<float*>(Ps_ + kBr * kLdP);
    Os_ = Ss_ + kBr * kLdS;
    warp_ = threadIdx.x / 32;
    lane_ = threadIdx.x % 32;
    const T* q = static_cast<const T*>(a.q);
    // Flat index e -> (row, column) by FastDiv (32-bit, no divide instruction).
    const int Dp = static_cast<int>(a.div_dp.divisor), Dvp = static_cast<int>(a.div_dvp.divisor);
    for (int e = threadIdx.x; e < kBr * Dp; e += kThreads) {
      const int r = static_cast<int>(fast_div(a.div_dp, e)), d = e - r * Dp;
      Qs_[r * ldq_ + d] = r < rows_.count && d < D_ ? q[a.offset(b, h, a.seq_len_q, rows_.at(r), D_) + d] : to_input<T>(0.f);
    }
    for (int e = threadIdx.x; e < kBr * Dvp; e += kThreads) {
      const int r = static_cast<int>(fast_div(a.div_dvp, e));
      Os_[r * ldo_ + (e - r * Dvp)] = 0.f;
    }
    // Two lanes per row: lanes 2r' and 2r'+1 own row warp*16 + r', each half of the columns
    // in the interleaved, rotated order of pair_column (tiling.h): no bank conflicts.
    m_ = -INFINITY;
    l_ = 0.f;
    // contract §2.9: a real row starts at the sink's logit, exp(σ − m) = 1 in l, so the sink
    // is in every rescaling and in lse; a row without keys ends with o = 0, lse = σ.
    const int r = warp_ * 16 + lane_ / 2;
    if (with_sink && a.sinks != nullptr && r < rows_.count && a.query_real(b, rows_.at(r))) {
      m_ = a.sinks[h];
      l_ = 1.f;
    }
    __syncthreads();
  }

  // One chunk of keys (keys.count <= kBc). allowed(i, j) is the pattern's predicate; when
  // `full` (every pair of the chunk allowed by the pattern: a chunk inside the band, a
  // full layout tile) it is not evaluated at all. Key padding is applied here. Every
  // thread of the block must call visit() with the same arguments.
  template <class Allowed>
  __device__ void visit(Strided keys, Allowed allowed, bool full = false) {
    using namespace nvcuda;
    const T* k = static_cast<const T*>(a_.k);
    const T* v = static_cast<const T*>(a_.v);
    const int Dp = static_cast<int>(a_.div_dp.divisor), Dvp = static_cast<int>(a_.div_dvp.divisor);
    const int count = static_cast<int>(keys.count);
    __syncthreads();  // every warp is done with the previous chunk's K/V
    for (int e = threadIdx.x; e < kBc * Dp; e += kThreads) {
      const int c = static_cast<int>(fast_div(a_.div_dp, e)), d = e - c * Dp;
      Ks_[c * ldq_ + d] = c < count && d < D_ ? k[a_.kv_offset(b_, h_, a_.seq_len_k, keys.at(c), D_) + d] : to_input<T>(0.f);
    }
    for (int e = threadIdx.x; e < kBc * Dvp; e += kThreads) {
      const int c = static_cast<int>(fast_div(a_.div_dvp, e)), d = e - c * Dvp;
      Vs_[c * ldv_ + d] = c < count && d < Dv_ ? v[a_.kv_offset(b_, h_, a_.seq_len_k, keys.at(c), Dv_) + d] : to_input<T>(0.f);
    }
    __syncthreads();  // K/V staged

    if (warp_ * 16 >= rows_.count) return;  // warp-uniform: no rows for this warp
    const int row0 = warp_ * 16;

    // S = Q Kᵀ for this warp's 16 rows: K stored [key][d] row-major is Kᵀ in column-major.
    {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s[kBc / 16];
#pragma unroll
      for (int n = 0; n < kBc / 16; ++n) wmma::fill_fragment(s[n], 0.f);
      for (int kk = 0; kk < Dp; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
        wmma::load_matrix_sync(qa, Qs_ + row0 * ldq_ + kk, ldq_);
#pragma unroll
        for (int n = 0; n < kBc / 16; ++n) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
          wmma::load_matrix_sync(kb, Ks_ + n * 16 * ldq_ + kk, ldq_);
          wmma::mma_sync(s[n], qa, kb, s[n]);
        }
      }
#pragma unroll
      for (int n = 0; n < kBc / 16; ++n)
        wmma::store_matrix_sync(Ss_ + row0 * kLdS + n * 16, s[n], kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax on the warp's rows, two lanes per row (32 columns each, pair_column's
    // order). The pattern's predicate is skipped on a full chunk; padding only if any.
    const int r = row0 + lane_ / 2;
    const bool row_ok = r < rows_.count;
    const int64_t i = row_ok ? rows_.at(r) : 0;
    const bool padded = a_.key_valid != nullptr;
    float* srow = Ss_ + r * kLdS;
    float mx = -INFINITY;
    // contract §2.8 on the allowed pairs: scale, softcap c·tanh(s/c), ALiBi −a·|p − j|.
    const float cap = a_.softcap;
    const bool alibi = a_.alibi != nullptr;
    const float slope = alibi ? a_.slope(b_, h_) : 0.f;
    const int64_t pos = i + a_.seq_len_k - a_.seq_len_q;
#pragma unroll 4
    for (int t = 0; t < kBc / 2; ++t) {
      const int c = pair_column(lane_, t, kBc / 2);
      const bool ok = row_ok && c < count && (full || allowed(i, keys.at(c))) &&
                      (!padded || padding_allows(a_.key_valid, a_.seq_len_q, a_.seq_len_k, b_, i, keys.at(c)));
      float s = ok ? a_.scale * srow[c] : -INFINITY;
      if (ok && cap > 0.f) s = cap * tanhf(s / cap);
      if (ok && alibi) {
        const int64_t j = keys.at(c);
        s -= slope * static_cast<float>(pos > j ? pos - j : j - pos);
      }
      srow[c] = s;
      mx = fmaxf(mx, s);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_, mx);
    float alpha = 1.f, sum = 0.f;
    T* prow = Ps_ + r * kLdP;
    if (m_new != -INFINITY) {
      alpha = expf(m_ - m_new);
#pragma unroll 4
      for (int t = 0; t < kBc / 2; ++t) {
        const int c = pair_column(lane_, t, kBc / 2);
        const float p = expf(srow[c] - m_new);
        sum += p;
        prow[c] = to_input<T>(p);
      }
      m_ = m_new;
    } else {
      for (int t = 0; t < kBc / 2; ++t) prow[pair_column(lane_, t, kBc / 2)] = to_input<T>(0.f);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_ = l_ * alpha + sum;
    float* orow = Os_ + r * ldo_;
    for (int t = 0; t < Dvp / 2; ++t) orow[pair_column(lane_, t, Dvp / 2)] *= alpha;
    __syncwarp();

    // O += P V.
    for (int n = 0; n < Dvp; n += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, Os_ + row0 * ldo_ + n, ldo_, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kBc; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
        wmma::load_matrix_sync(pa, Ps_ + row0 * kLdP + kk, kLdP);
        wmma::load_matrix_sync(vb, Vs_ + kk * ldv_ + n, ldv_);
        wmma::mma_sync(o, pa, vb, o);
      }
      wmma::store_matrix_sync(Os_ + row0 * ldo_ + n, o, ldo_, wmma::mem_row_major);
    }
    __syncwarp();
  }

  // o = O / l and lse = m + log l for the block's rows (o = 0, lse = -inf for a row with no
  // allowed key; with a sink lse = σ, l = 1 from the constructor), into a.o / a.lse — or, for a split-K part, into its workspace rows:
  // o_rows [row - first_row][Dv], lse_rows [row - first_row].
  __device__ void finish(float* o_rows = nullptr, float* lse_rows = nullptr, int64_t first_row = 0) {
    __syncwarp();
    const int r = warp_ * 16 + lane_ / 2;
    if (r >= rows_.count) return;
    const int64_t i = rows_.at(r);
    const bool empty = l_ == 0.f;
    const float inv_l = empty ? 0.f : 1.f / l_;
    float* o = o_rows != nullptr ? o_rows + (i - first_row) * Dv_ : a_.o + a_.offset(b_, h_, a_.seq_len_q, i, Dv_);
    float* lse = lse_rows != nullptr ? lse_rows + (i - first_row) : a_.lse + (b_ * a_.num_heads + h_) * a_.seq_len_q + i;
    for (int d = lane_ % 2; d < Dv_; d += 2) o[d] = Os_[r * ldo_ + d] * inv_l;
    if (lane_ % 2 == 0) *lse = empty ? -INFINITY : m_ + logf(l_);
  }

 private:
  const AttnArgs& a_;
  int64_t b_, h_;
  Strided rows_;
  int D_, Dv_, ldq_, ldv_, ldo_;  // shared-memory indices fit 32 bits (< 200 KB)
  T *Qs_, *Ks_, *Vs_, *Ps_;
  float *Ss_, *Os_;
  int warp_, lane_;
  float m_, l_;  // this lane's row (both lanes of a pair hold the same values)
};

}  // namespace cuda
}  // namespace sparseattn
