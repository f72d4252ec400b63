// c11 — packed variable-length batches (contract §2.10) in one launch, read in place.
//
// Contract: matches a1_dense_masked through the layout walk (api/layout_walk.h:
// attend_varlen — each sequence's rows, the spec materialized for its own (seq_len_q(b),
// seq_len_k(b))) at kTolFloat32 (float32 inputs) or, on the bf16-rounded inputs,
// kTolBfloat16 (bf16 inputs, widened to float32 in shared memory: the arithmetic is float32
// either way). Serves `dense`, `window` (any dilation, left/right) and `chunked`, causal or
// not, one spec for every head, no key padding (varlen_plan.h: varlen_serves; the walk
// keeps serving every other pattern with the other kernels). Reads packed q [total_q, H_q,
// d], k [total_k, H_kv, d], v [total_k, H_kv, d_v] with cu_seqlens_q/k on the device and
// writes o [total_q, H_q, d_v], lse [H_q, total_q] (registry feature kVarlen); plain [B, H,
// L, d] inputs are read as B sequences of equal lengths. Grouped heads (h reads kv head
// h / g), softcap, ALiBi [H_q] / [B, H_q] and sinks (kModern), the modifiers in float32.
// Empty sequences have no tile; a sequence with queries and no keys ends at o = 0, lse = −∞
// (σ_h with a sink). Deterministic: no atomics. head_dim, head_dim_v in [1, 256].
// Checked by tests/cuda/cuda_layout_kernels_test.cpp (c11/CudaVarlen.*) and the plain grid
// (c11/CudaVsOracle.*, Modern/*) when a device is present.
//
// How: the host plans (varlen_plan.h) the tiles — 32 consecutive queries of one sequence,
// sequence-major, a prefix over ⌈seq_len_q(b) / 32⌉ as FlashAttention's varlen scheduling —
// and each packed row's keys, one progression per row (pattern/decode_row.h, the rule the
// decode kernels read). One thread block per (tile, query head) runs gather_f32.cuh's online
// softmax over the key span of its tile's rows, 32 keys at a time, each slot weighted 0/1 by
// the row's progression. Without split-K a long sequence's tiles each walk all of their
// keys; the g heads of a kv head are separate blocks (K/V re-read from L2, not shared
// memory). A sink σ_h is added once per row after the softmax: lse' = log(e^lse + e^σ),
// o' = o·e^(lse − lse') (contract §2.9).
// Measured: not yet measured: not yet run on a GPU (docs/cuda.md, "Results").
#include <cuda_bf16.h>

#include "optimized/cuda/gather_f32.cuh"
#include "optimized/cuda/launchers.h"
#include "optimized/cuda/varlen_plan.h"

namespace sparseattn {
namespace cuda {

namespace {

// Row r of (sequence b, head h) sits at element ((cu[b]·heads + h·head_stride + i·row_stride)
// · width) of q / o (heads = H_q) and k / v (heads = H_kv): packed head_stride 1, row_stride
// heads; plain (cu[b] = b·L) head_stride L, row_stride 1. lse of (b, h, i) at cu_q[b]·
// lse_seq_stride + h·lse_head_stride + i: packed (1, total_q), plain (H_q, L_q).
struct VarlenArgs {
  AttnArgs a;
  const DecodeRowKeys* rows = nullptr;  // [total_q]
  const VarlenTile* tiles = nullptr;
  const int64_t* cu_q = nullptr;        // [B + 1]
  const int64_t* cu_k = nullptr;        // [B + 1]
  int64_t q_head_stride = 0, q_row_stride = 0, kv_head_stride = 0, kv_row_stride = 0;
  int64_t lse_seq_stride = 0, lse_head_stride = 0;
};

template <class T>
__global__ void __launch_bounds__(GatherF32Block<T>::kThreads) varlen_kernel(VarlenArgs x) {
  using Block = GatherF32Block<T>;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ DecodeRowKeys row_keys[Block::kRows];
  const AttnArgs& a = x.a;
  const VarlenTile t = x.tiles[blockIdx.x];
  const int64_t h = blockIdx.y, kvh = h / a.group, b = t.b;
  const int64_t cq = x.cu_q[b], ck = x.cu_k[b];
  // contract §2.10: query i of the sequence sits at p = i + seq_len_k(b) − seq_len_q(b).
  const int64_t shift = (x.cu_k[b + 1] - ck) - (x.cu_q[b + 1] - cq);
  const int rows = t.rows;
  if (threadIdx.x < rows) row_keys[threadIdx.x] = x.rows[cq + t.i0 + threadIdx.x];
  __syncthreads();  // the rows' keys, read by every warp in visit()
  const int64_t q_base = cq * a.num_heads + h * x.q_head_stride;   // + i · q_row_stride
  const int64_t kv_base = ck * a.num_kv_heads + kvh * x.kv_head_stride;  // + j · kv_row_stride
  const int64_t lse_base = cq * x.lse_seq_stride + h * x.lse_head_stride + t.i0;  // + r
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  auto o_row = [&](int r) { return a.o + (q_base + (t.i0 + r) * x.q_row_stride) * a.head_dim_v; };
  Block block(smem, a.head_dim, a.head_dim_v, a.div_d, a.div_dv, rows, a.scale,
              [&](int r) { return q + (q_base + (t.i0 + r) * x.q_row_stride) * a.head_dim; });
  const float slope = a.alibi != nullptr ? a.slope(b, h) : 0.f;
  for (int64_t j = t.j0; j < t.j1; j += Block::kSlots) {
    const int count = static_cast<int>(min64(Block::kSlots, t.j1 - j));
    block.stage(count, k, v, [&](int c) { return kv_base + (j + c) * x.kv_row_stride; });
    block.visit(
        count, [&](int r, int c) { return decode_row_allows(row_keys[r], j + c) ? 1.f : 0.f; },
        [&](int r, int c, float s) {
          if (a.softcap > 0.f) s = a.softcap * tanhf(s / a.softcap);  // contract §2.8
          if (a.alibi != nullptr) {
            const int64_t p = t.i0 + r + shift, key = j + c;
            s -= slope * static_cast<float>(p > key ? p - key : key - p);
          }
          return s;
        });
  }
  block.finish(o_row, [&](int r) { return a.lse + lse_base + r; });
  if (a.sinks == nullptr) return;
  // The sink, once per row (contract §2.9). The barrier makes every warp's o and lse writes
  // above visible to the whole block before any thread rescales them.
  __syncthreads();
  const float sigma = a.sinks[h];
  auto with_sink = [&](float lse) {
    const float hi = fmaxf(lse, sigma), lo = fminf(lse, sigma);
    return lo == -INFINITY ? hi : hi + log1pf(expf(lo - hi));
  };
  const int dv = static_cast<int>(a.head_dim_v);
  for (int e = threadIdx.x; e < rows * dv; e += Block::kThreads) {
    const int r = e / dv, d = e - r * dv;
    const float lse = a.lse[lse_base + r];
    o_row(r)[d] *= expf(lse - with_sink(lse));  // lse = −∞ (no key): o stays 0
  }
  __syncthreads();  // every thread has read the old lse before it is replaced
  if (threadIdx.x < rows) a.lse[lse_base + threadIdx.x] = with_sink(a.lse[lse_base + threadIdx.x]);
}

template <class T>
void launch_varlen(DeviceProblem& p, cudaStream_t stream, const char* name) {
  using Block = GatherF32Block<T>;
  const AttentionShape& s = p.shape;
  require(p.host_pattern != nullptr && varlen_serves(*p.host_pattern), "pattern",
          p.host_pattern != nullptr ? describe(p.host_pattern->spec) : std::string("none"),
          std::string(name) + " serves dense, window, chunked (one spec, no key padding)");
  require(s.head_dim <= Block::kMaxHeadDim, "head_dim", s.head_dim, "the CUDA packed-batch kernel takes 1 .. 256");
  require(s.head_dim_v <= Block::kMaxHeadDim, "head_dim_v", s.head_dim_v,
          "the CUDA packed-batch kernel takes 1 .. 256");
  require(s.num_heads <= 65535, "num_heads", s.num_heads,
          "the CUDA packed-batch kernel launches one grid row per query head: 1 .. 65535");
  // The plan and the cu_seqlens (a plain problem's equal lengths), uploaded once per problem.
  if (p.varlen_tiles_count < 0) {
    const Varlen vl = p.varlen ? *p.varlen : plain_varlen(s.batch, s.seq_len_q, s.seq_len_k);
    const VarlenPlan plan = plan_varlen(p.host_pattern->spec, vl);
    p.varlen_rows.upload(plan.rows);
    p.varlen_tiles.upload(plan.tiles);
    p.varlen_cu_q.upload(vl.cu_seqlens_q);
    p.varlen_cu_k.upload(vl.cu_seqlens_k);
    p.varlen_tiles_count = static_cast<int64_t>(plan.tiles.size());
  }
  if (p.varlen_tiles_count == 0) return;  // every sequence empty: no output row exists
  VarlenArgs x;
  x.a = p.args();
  x.rows = p.varlen_rows.ptr();
  x.tiles = p.varlen_tiles.ptr();
  x.cu_q = p.varlen_cu_q.ptr();
  x.cu_k = p.varlen_cu_k.ptr();
  if (p.varlen) {  // packed [total, H, d]; lse [H_q, total_q]
    x.q_head_stride = 1;
    x.q_row_stride = s.num_heads;
    x.kv_head_stride = 1;
    x.kv_row_stride = s.num_kv_heads;
    x.lse_seq_stride = 1;
    x.lse_head_stride = s.seq_len_q;  // total_q
  } else {  // plain [B, H, L, d]; lse [B, H_q, L_q]
    x.q_head_stride = s.seq_len_q;
    x.q_row_stride = 1;
    x.kv_head_stride = s.seq_len_k;
    x.kv_row_stride = 1;
    x.lse_seq_stride = s.num_heads;
    x.lse_head_stride = s.seq_len_q;
  }
  const size_t smem = Block::smem_bytes(s.head_dim, s.head_dim_v);
  configure_shared_memory(reinterpret_cast<const void*>(&varlen_kernel<T>), smem, "head_dim", s.head_dim);
  varlen_kernel<T><<<dim3(static_cast<unsigned>(p.varlen_tiles_count), static_cast<unsigned>(s.num_heads)),
                     Block::kThreads, smem, stream>>>(x);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_cuda_c11_varlen_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_varlen<float>(p, stream, "cuda_c11_varlen_f32");
}
void launch_cuda_c11_varlen_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_varlen<__nv_bfloat16>(p, stream, "cuda_c11_varlen_bf16");
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c11_varlen_f32(const Pattern& p) { return cuda::varlen_serves(p); }
bool serves_cuda_c11_varlen_bf16(const Pattern& p) { return cuda::varlen_serves(p); }
}  // namespace entry
}  // namespace sparseattn
