// cb01 — the backward pass (dq, dk, dv) over the canonical layout, float32, on the GPU.
//
// Contract: matches b1_dense_masked_grad (the float64 gradient oracle) at kTolFloat32 on
// dq, dk, dv (core/numerics.h); ANY pattern kind, key padding; any head_dim, head_dim_v;
// consumes the saved o and lse of its forward kernel cuda_c08_generic_f32 (registry/
// cuda_backward_kernels.def). Exact zeros where the gradient is structurally zero: a row
// with lse = -inf gets dq = 0, a key no row attends gets dk = dv = 0. Deterministic: every
// output element has one owning thread that sums in a fixed order (no atomics), so repeated
// runs are bit-identical.
//
// Written to be obviously correct, not fast (the first rung of a CUDA backward ladder;
// not yet run on a GPU when written — tests/cuda/cuda_backward_test.cpp checks it where a
// device exists). The formulas are those of b3 (FlashAttention-2 backward, Dao 2023,
// Alg. 2; docs/backward.md), split over three kernels per head:
//   delta_kernel: D_i = <do_i, o_i>, one thread per (batch, head, row).
//   dkdv_kernel:  one thread per (batch, key j). It walks the query tiles that list j's
//                 key tile (ColumnLayout, ascending) and their rows, and for every allowed
//                 (i, j): p = exp(scale <q_i, k_j> − lse_i), dv_j += p do_i,
//                 ds = p (<do_i, v_j> − D_i), dk_j += scale ds q_i — FA2's key-tile outer
//                 loop with one thread, not one thread block, per key.
//   dq_kernel:    one thread per (batch, row i). It walks its query tile's listed key
//                 tiles (ascending) and adds dq_i += scale ds k_j, recomputing p and ds
//                 (FA2 adds dq with atomics from the key-tile loop instead; their order,
//                 and so the rounding, would depend on the schedule).
// Accumulators live in the output arrays themselves (global memory, owned by the thread).
// The attention of current models (contract §2.7-§2.9, §7.7): k, v rows of kv head h / g;
// each score through the pipeline (scale, softcap, ALiBi) and ds times the softcap's
// 1 − tanh²; dk, dv per query head, then group_sum_kernel adds each group in head order;
// dσ on the host from the saved lse and D.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"; docs/backward.md,
// "Measured", says the same). History: optimized/cuda/TUNING.md.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "optimized/cuda/device_runtime.h"
#include "pattern/column_layout.h"
#include "registry/backward.h"

namespace sparseattn {
namespace cuda {
namespace {

// One head's layout on the device (layout.h and column_layout.h, flattened).
struct DeviceLayout {
  int64_t tile, num_q_tiles, num_k_tiles, words;
  const int64_t* row_ptr;  // [num_q_tiles + 1]
  const int32_t* col;      // [num_tiles]
  const int64_t* bits_at;  // [num_tiles], -1 = full
  const uint64_t* bits;
  const int64_t* col_ptr;  // [num_k_tiles + 1]
  const int32_t* row;      // [num_tiles]
  const int64_t* entry;    // [num_tiles]
};

struct Sizes {
  int64_t B, H, Lq, Lk, D, Dv, h;  // h: the query head this launch serves
  float scale;
  int64_t Hkv, group;  // contract §2.7: query head h reads kv head h / group
  // contract §2.8 in float32: softcap c > 0 (0: none); ALiBi slopes [H] or [B, H] (null:
  // none), a[b, h] at alibi[b * alibi_batch_stride + h].
  float softcap;
  const float* alibi;
  int64_t alibi_batch_stride;
};

// The score of an allowed pair through contract §2.8's pipeline (scale, softcap, ALiBi) and
// its derivative with respect to the scaled score (the softcap's 1 − tanh²; ALiBi is a
// constant per pair).
struct Score {
  float s, slope;
};
__device__ Score pipeline(const Sizes& z, int64_t b, float scaled, int64_t i, int64_t j) {
  Score r{scaled, 1.0f};
  if (z.softcap > 0.0f) {
    const float t = tanhf(scaled / z.softcap);
    r.s = z.softcap * t;
    r.slope = 1.0f - t * t;
  }
  if (z.alibi != nullptr) {
    const int64_t p = i + z.Lk - z.Lq;
    r.s -= z.alibi[b * z.alibi_batch_stride + z.h] * static_cast<float>(p > j ? p - j : j - p);
  }
  return r;
}

__device__ bool tile_allows(const DeviceLayout& L, int64_t e, int64_t r, int64_t c) {
  const int64_t at = L.bits_at[e];
  if (at < 0) return true;
  return (L.bits[at + r * L.words + c / 64] >> (c % 64)) & 1ull;
}

__device__ float dot(const float* x, const float* y, int64_t n) {
  float acc = 0.0f;
  for (int64_t e = 0; e < n; ++e) acc += x[e] * y[e];
  return acc;
}

// D[b, h, i] = <do_i, o_i> for every (b, h, i); grid covers B·H·Lq threads.
__global__ void delta_kernel(const float* dout, const float* o, float* Dm, int64_t rows, int64_t Dv) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t < rows) Dm[t] = dot(dout + t * Dv, o + t * Dv, Dv);
}

// One thread per (batch = blockIdx.y, key j) of head s.h.
__global__ void dkdv_kernel(DeviceLayout L, Sizes s, const float* q, const float* k,
                            const float* v, const float* dout, const float* lse,
                            const float* Dm, const uint8_t* key_valid, float* dk, float* dv) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (j >= s.Lk) return;
  const int64_t bh = b * s.H + s.h, bkv = b * s.Hkv + s.h / s.group;
  const float* kj = k + (bkv * s.Lk + j) * s.D;
  const float* vj = v + (bkv * s.Lk + j) * s.Dv;
  float* dkj = dk + (bh * s.Lk + j) * s.D;  // per query head; summed over the group later
  float* dvj = dv + (bh * s.Lk + j) * s.Dv;
  for (int64_t d = 0; d < s.D; ++d) dkj[d] = 0.0f;
  for (int64_t e = 0; e < s.Dv; ++e) dvj[e] = 0.0f;
  if (key_valid != nullptr && !key_valid[b * s.Lk + j]) return;  // padded key: dk = dv = 0
  const int64_t kt = j / L.tile, c = j % L.tile;
  for (int64_t x = L.col_ptr[kt]; x < L.col_ptr[kt + 1]; ++x) {
    const int64_t e = L.entry[x], i0 = static_cast<int64_t>(L.row[x]) * L.tile;
    const int64_t rows = min(L.tile, s.Lq - i0);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const float lse_i = lse[bh * s.Lq + i];
      if (isinf(lse_i) || !tile_allows(L, e, r, c)) continue;  // fully masked row / not allowed
      const float* qi = q + (bh * s.Lq + i) * s.D;
      const float* doi = dout + (bh * s.Lq + i) * s.Dv;
      const Score sc = pipeline(s, b, s.scale * dot(qi, kj, s.D), i, j);
      const float p = expf(sc.s - lse_i);
      const float ds = p * (dot(doi, vj, s.Dv) - Dm[bh * s.Lq + i]) * sc.slope;
      for (int64_t ee = 0; ee < s.Dv; ++ee) dvj[ee] += p * doi[ee];
      for (int64_t d = 0; d < s.D; ++d) dkj[d] += s.scale * ds * qi[d];
    }
  }
}

// One thread per (batch = blockIdx.y, row i) of head s.h.
__global__ void dq_kernel(DeviceLayout L, Sizes s, const float* q, const float* k,
                          const float* v, const float* dout, const float* lse, const float* Dm,
                          const uint8_t* key_valid, float* dq) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (i >= s.Lq) return;
  const int64_t bh = b * s.H + s.h, bkv = b * s.Hkv + s.h / s.group;
  float* dqi = dq + (bh * s.Lq + i) * s.D;
  for (int64_t d = 0; d < s.D; ++d) dqi[d] = 0.0f;
  const float lse_i = lse[bh * s.Lq + i];
  if (isinf(lse_i)) return;  // fully masked row (padded queries included): dq = 0
  const float* qi = q + (bh * s.Lq + i) * s.D;
  const float* doi = dout + (bh * s.Lq + i) * s.Dv;
  const float Di = Dm[bh * s.Lq + i];
  const int64_t qt = i / L.tile, r = i % L.tile;
  for (int64_t e = L.row_ptr[qt]; e < L.row_ptr[qt + 1]; ++e) {
    const int64_t j0 = static_cast<int64_t>(L.col[e]) * L.tile;
    const int64_t cols = min(L.tile, s.Lk - j0);
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t j = j0 + c;
      if (!tile_allows(L, e, r, c)) continue;
      if (key_valid != nullptr && !key_valid[b * s.Lk + j]) continue;
      const float* kj = k + (bkv * s.Lk + j) * s.D;
      const Score sc = pipeline(s, b, s.scale * dot(qi, kj, s.D), i, j);
      const float p = expf(sc.s - lse_i);
      const float ds = p * (dot(doi, v + (bkv * s.Lk + j) * s.Dv, s.Dv) - Di) * sc.slope;
      for (int64_t d = 0; d < s.D; ++d) dqi[d] += s.scale * ds * kj[d];
    }
  }
}

// y[b, kv, j, :] = Σ_{t < group} x[b, kv·group + t, j, :], t ascending: dk or dv of a kv head
// over its query heads (contract §2.7); one thread per element of y, no atomics.
__global__ void group_sum_kernel(const float* x, float* y, int64_t rows_kv, int64_t Lk,
                                 int64_t width, int64_t group) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= rows_kv * width) return;
  const int64_t row = t / width, d = t % width, bkv = row / Lk, j = row % Lk;
  float acc = 0.0f;
  for (int64_t g = 0; g < group; ++g) acc += x[((bkv * group + g) * Lk + j) * width + d];
  y[t] = acc;
}

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  d.upload(host);
  return d;
}

unsigned blocks_for(int64_t n, unsigned threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace

// q/k/v/o/lse/dout: the problem's float32 tensors and the forward's saved o32/lse32.
void cb01_generic_grad(const GradProblem& g, GradOutput& out) {
  require_device("cuda_cb01_generic_grad_f32");
  const Problem& p = *g.problem;
  const AttentionShape& sh = p.shape;
  const Pattern& pattern = *p.pattern;
  require(g.o32.numel() == sh.batch * sh.num_heads * sh.seq_len_q * sh.head_dim_v &&
              g.lse32.numel() == sh.batch * sh.num_heads * sh.seq_len_q,
          "o/lse", "missing", "cuda_cb01_generic_grad_f32 needs its forward's saved o and lse");
  const int64_t B = sh.batch, H = sh.num_heads, Lq = sh.seq_len_q, Lk = sh.seq_len_k;
  const int64_t D = sh.head_dim, Dv = sh.head_dim_v;
  const int64_t Hkv = sh.num_kv_heads, group = sh.group();
  if (B > 65535) throw InvalidArgument("batch", std::to_string(B), "must be <= 65535 for cb01 (grid.y)");

  const DeviceBuffer<float> q = to_device(p.q32.data), k = to_device(p.k32.data),
                            v = to_device(p.v32.data), o = to_device(g.o32.data),
                            lse = to_device(g.lse32.data), dout = to_device(g.dout32.data);
  DeviceBuffer<uint8_t> key_valid;
  if (pattern.has_key_padding()) key_valid.upload(pattern.spec.key_padding_mask->data);
  DeviceBuffer<float> Dm(static_cast<size_t>(B * H * Lq));
  // dk, dv per query head [B, H, Lk, ·]; with group > 1 summed into [B, H_kv, Lk, ·] below.
  DeviceBuffer<float> dq(static_cast<size_t>(B * H * Lq * D)), dk(static_cast<size_t>(B * H * Lk * D)),
      dv(static_cast<size_t>(B * H * Lk * Dv));
  // The score modifiers in float32 (contract §2.8: never rounded further).
  const ScoreMods& mods = p.mods;
  DeviceBuffer<float> alibi;
  int64_t alibi_batch_stride = 0;
  if (mods.alibi_slopes) {
    const Tensor<double>& a = *mods.alibi_slopes;
    alibi.upload(std::vector<float>(a.data.begin(), a.data.end()));
    alibi_batch_stride = a.rank() == 2 ? H : 0;
  }
  const float softcap = mods.softcap ? static_cast<float>(*mods.softcap) : 0.0f;

  constexpr unsigned kThreads = 128;
  delta_kernel<<<blocks_for(B * H * Lq, kThreads), kThreads>>>(dout.ptr(), o.ptr(), Dm.ptr(),
                                                              B * H * Lq, Dv);
  CUDA_CHECK_LAUNCH();
  for (int64_t h = 0; h < H; ++h) {
    const HeadLayout& hl = pattern.head(h);
    const ColumnLayout cl = column_layout(hl);
    const DeviceBuffer<int64_t> row_ptr = to_device(hl.row_ptr), bits_at = to_device(hl.bits_at),
                                col_ptr = to_device(cl.col_ptr), entry = to_device(cl.entry);
    const DeviceBuffer<int32_t> col = to_device(hl.col), row = to_device(cl.row);
    const DeviceBuffer<uint64_t> bits = to_device(hl.bits);
    const DeviceLayout L{hl.tile,      hl.num_q_tiles(), hl.num_k_tiles(), hl.words_per_row(),
                         row_ptr.ptr(), col.ptr(),        bits_at.ptr(),    bits.ptr(),
                         col_ptr.ptr(), row.ptr(),        entry.ptr()};
    const Sizes s{B,   H,     Lq,      Lk,          D,  Dv, h, static_cast<float>(p.scale),
                  Hkv, group, softcap, alibi.ptr(), alibi_batch_stride};
    dkdv_kernel<<<dim3(blocks_for(Lk, kThreads), static_cast<unsigned>(B)), kThreads>>>(
        L, s, q.ptr(), k.ptr(), v.ptr(), dout.ptr(), lse.ptr(), Dm.ptr(), key_valid.ptr(),
        dk.ptr(), dv.ptr());
    CUDA_CHECK_LAUNCH();
    dq_kernel<<<dim3(blocks_for(Lq, kThreads), static_cast<unsigned>(B)), kThreads>>>(
        L, s, q.ptr(), k.ptr(), v.ptr(), dout.ptr(), lse.ptr(), Dm.ptr(), key_valid.ptr(), dq.ptr());
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());  // the head's layout buffers are freed next
  }
  out.dq32 = Tensor<float>({B, H, Lq, D});
  out.dk32 = Tensor<float>({B, Hkv, Lk, D});
  out.dv32 = Tensor<float>({B, Hkv, Lk, Dv});
  dq.download(out.dq32.ptr(), out.dq32.data.size());
  if (group == 1) {
    dk.download(out.dk32.ptr(), out.dk32.data.size());
    dv.download(out.dv32.ptr(), out.dv32.data.size());
  } else {
    DeviceBuffer<float> dk_kv(out.dk32.data.size()), dv_kv(out.dv32.data.size());
    group_sum_kernel<<<blocks_for(B * Hkv * Lk * D, kThreads), kThreads>>>(dk.ptr(), dk_kv.ptr(),
                                                                            B * Hkv * Lk, Lk, D, group);
    CUDA_CHECK_LAUNCH();
    group_sum_kernel<<<blocks_for(B * Hkv * Lk * Dv, kThreads), kThreads>>>(dv.ptr(), dv_kv.ptr(),
                                                                             B * Hkv * Lk, Lk, Dv, group);
    CUDA_CHECK_LAUNCH();
    dk_kv.download(out.dk32.ptr(), out.dk32.data.size());
    dv_kv.download(out.dv32.ptr(), out.dv32.data.size());
  }
  // contract §7.7: dσ_h = −Σ_{b,i} exp(σ_h − lse)·D_i, on the host in float64, (b, i)
  // ascending; padded queries (lse = -inf) skipped, rows without keys have D = 0.
  if (mods.sinks) {
    std::vector<float> Dh(static_cast<size_t>(B * H * Lq));
    Dm.download(Dh.data(), Dh.size());
    out.dsinks = Tensor<double>({H}, 0.0);
    for (int64_t h = 0; h < H; ++h) {
      double acc = 0.0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < Lq; ++i) {
          const int64_t row = (b * H + h) * Lq + i;
          const float lse = g.lse32.data[row];
          if (std::isinf(lse)) continue;
          acc += std::exp(mods.sinks->data[h] - static_cast<double>(lse)) * static_cast<double>(Dh[row]);
        }
      out.dsinks.data[h] = -acc;
    }
  }
}

}  // namespace cuda

namespace entry {
void grad_run_cuda_cb01_generic_grad_f32(const GradProblem& g, GradOutput& out) {
  cuda::cb01_generic_grad(g, out);
}
bool grad_serves_cuda_cb01_generic_grad_f32(const Pattern&) { return true; }
}  // namespace entry
}  // namespace sparseattn
