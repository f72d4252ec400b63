// c02 — tiled dense attention: key/value chunks staged in shared memory, no score matrix.
//
// Contract: matches a1_dense_masked at kTolFloat32 on float32 inputs; pattern kind
// `dense` (causal or not, key padding allowed); one chunk, 128 * (head_dim + head_dim_v)
// bytes, must fit the device's shared memory per block (checked: InvalidArgument).
//
// What changed since c01, and why: a block of 128 query rows (still one thread per
// row) loads each chunk of Bc = 32 keys and values into shared memory once, and all 128
// rows read it there — 128x less K/V traffic from global memory. The score matrix is
// gone: pass 1 finds each row's max, pass 2 recomputes the scores (compute is cheaper
// than the memory round trip) and accumulates l and o. Causal rows skip the chunks
// above the diagonal (band_chunks). Still two passes over K, and o accumulates in global
// memory (each row owned by one thread, so no races); c03 fuses everything into one pass.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"). History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/launchers.h"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

namespace {

constexpr int kThreads = 128;  // = rows per block
constexpr int kBc = 32;        // keys per staged chunk

size_t c02_smem_bytes(int64_t D, int64_t Dv) { return sizeof(float) * kBc * static_cast<size_t>(D + Dv); }

__global__ void __launch_bounds__(kThreads) c02_tiled_dense(AttnArgs a) {
  extern __shared__ __align__(16) float smem[];
  const int64_t D = a.head_dim, Dv = a.head_dim_v, Lk = a.seq_len_k;
  float* Ks = smem;           // [Bc][D]
  float* Vs = smem + kBc * D; // [Bc][Dv]
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t i0 = blockIdx.x * static_cast<int64_t>(kThreads);
  const int64_t i = i0 + threadIdx.x;
  const bool row_ok = i < a.seq_len_q;  // idle threads still help stage chunks
  const float* q = static_cast<const float*>(a.q) + a.offset(b, h, a.seq_len_q, row_ok ? i : 0, D);
  const float* k = static_cast<const float*>(a.k) + a.offset(b, h, Lk, 0, D);
  const float* v = static_cast<const float*>(a.v) + a.offset(b, h, Lk, 0, Dv);
  float* o = a.o + a.offset(b, h, a.seq_len_q, row_ok ? i : 0, Dv);
  const ChunkRange chunks = band_chunks(a.band, i0, min64(i0 + kThreads, a.seq_len_q), kBc);

  auto score = [&](int64_t c, int64_t j) {
    if (!row_ok || !band_allows(a.band, i, j) || !padding_allows(a.key_valid, a.seq_len_q, Lk, b, i, j))
      return -INFINITY;
    float dot = 0.f;
    for (int64_t d = 0; d < D; ++d) dot = fmaf(q[d], Ks[c * D + d], dot);
    return a.scale * dot;
  };

  // Pass 1: the row maximum.
  float m = -INFINITY;
  for (int64_t k0 = chunks.begin; k0 < chunks.end; k0 += kBc) {
    const int64_t n = min64(kBc, chunks.end - k0);
    __syncthreads();  // the previous chunk is no longer read
    for (int64_t e = threadIdx.x; e < n * D; e += kThreads) Ks[e] = k[k0 * D + e];
    __syncthreads();  // chunk staged
    for (int64_t c = 0; c < n; ++c) m = fmaxf(m, score(c, k0 + c));
  }
  // Pass 2: l and o with the final max, scores recomputed.
  if (row_ok)
    for (int64_t d = 0; d < Dv; ++d) o[d] = 0.f;
  float l = 0.f;
  for (int64_t k0 = chunks.begin; k0 < chunks.end; k0 += kBc) {
    const int64_t n = min64(kBc, chunks.end - k0);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < n * D; e += kThreads) Ks[e] = k[k0 * D + e];
    for (int64_t e = threadIdx.x; e < n * Dv; e += kThreads) Vs[e] = v[k0 * Dv + e];
    __syncthreads();
    if (m == -INFINITY) continue;  // fully masked row: nothing to add
    for (int64_t c = 0; c < n; ++c) {
      const float p = expf(score(c, k0 + c) - m);
      if (p == 0.f) continue;
      l += p;
      for (int64_t d = 0; d < Dv; ++d) o[d] = fmaf(p, Vs[c * Dv + d], o[d]);
    }
  }
  if (!row_ok) return;
  const float inv_l = l == 0.f ? 0.f : 1.f / l;
  for (int64_t d = 0; d < Dv; ++d) o[d] *= inv_l;
  a.lse[(b * a.num_heads + h) * a.seq_len_q + i] = l == 0.f ? -INFINITY : m + logf(l);
}

}  // namespace

void launch_cuda_c02_tiled_dense(DeviceProblem& p, cudaStream_t stream) {
  const AttentionShape& s = p.shape;
  const size_t smem = c02_smem_bytes(s.head_dim, s.head_dim_v);
  configure_shared_memory(reinterpret_cast<const void*>(c02_tiled_dense), smem, "head_dim",
                          s.head_dim);
  const Grid g = attention_grid(blocks_of(s.seq_len_q, kThreads), s.num_heads, s.batch);
  c02_tiled_dense<<<dim3(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z)),
                    kThreads, smem, stream>>>(p.args());
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c02_tiled_dense(const Pattern& p) { return p.spec.kind == PatternKind::dense; }
}  // namespace entry
}  // namespace sparseattn
