// c01 — naive dense attention: one thread per query row, the row's scores in global memory.
//
// Contract: matches a1_dense_masked (the float64 oracle) at kTolFloat32 (core/numerics.h)
// on float32 inputs; pattern kind `dense` (causal or not, key padding allowed); any
// head_dim. Needs a [batch, num_heads, seq_len_q, seq_len_k] float32 score matrix in
// device memory (throws InvalidArgument("seq_len_k") when it does not fit).
//
// What it teaches: the definition, transcribed (Vaswani et al. 2017, eq. 1) — pass 1
// writes s_ij = scale <q_i, k_j> and the row max, pass 2 turns them into
// exp(s_ij - max) and sums them, pass 3 forms o_i = sum_j p_ij v_j / l_i. Every score
// makes a round trip through global memory and every thread streams all of K and V
// alone: O(n^2) memory and no reuse. c02 removes the score matrix and shares K/V.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results"). History:
// optimized/cuda/TUNING.md.
#include "optimized/cuda/device_problem.h"
#include "optimized/cuda/launchers.h"
#include "optimized/cuda/tiling.h"

namespace sparseattn {
namespace cuda {

namespace {

constexpr int kThreads = 128;

__global__ void c01_naive_dense(AttnArgs a, float* scores) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  if (i >= a.seq_len_q) return;
  const int64_t D = a.head_dim, Dv = a.head_dim_v, Lk = a.seq_len_k;
  const float* q = static_cast<const float*>(a.q) + a.offset(b, h, a.seq_len_q, i, D);
  const float* k = static_cast<const float*>(a.k) + a.offset(b, h, Lk, 0, D);
  const float* v = static_cast<const float*>(a.v) + a.offset(b, h, Lk, 0, Dv);
  float* s = scores + a.offset(b, h, a.seq_len_q, i, Lk);
  float* o = a.o + a.offset(b, h, a.seq_len_q, i, Dv);
  float* lse = a.lse + (b * a.num_heads + h) * a.seq_len_q + i;

  // Pass 1: scores (masked ones -inf, contract §4) and their maximum.
  float m = -INFINITY;
  for (int64_t j = 0; j < Lk; ++j) {
    float sj = -INFINITY;
    if (band_allows(a.band, i, j) && padding_allows(a.key_valid, a.seq_len_q, Lk, b, i, j)) {
      float dot = 0.f;
      for (int64_t d = 0; d < D; ++d) dot = fmaf(q[d], k[j * D + d], dot);
      sj = a.scale * dot;
    }
    s[j] = sj;
    m = fmaxf(m, sj);
  }
  if (m == -INFINITY) {  // no allowed key: o = 0, lse = -inf (contract §2)
    for (int64_t d = 0; d < Dv; ++d) o[d] = 0.f;
    *lse = -INFINITY;
    return;
  }
  // Pass 2: p_ij = exp(s_ij - m) in place, and l = sum_j p_ij.
  float l = 0.f;
  for (int64_t j = 0; j < Lk; ++j) {
    const float p = expf(s[j] - m);
    s[j] = p;
    l += p;
  }
  // Pass 3: o_i = sum_j p_ij v_j / l.
  for (int64_t d = 0; d < Dv; ++d) {
    float acc = 0.f;
    for (int64_t j = 0; j < Lk; ++j) acc = fmaf(s[j], v[j * Dv + d], acc);
    o[d] = acc / l;
  }
  *lse = m + logf(l);
}

}  // namespace

void launch_cuda_c01_naive_dense(DeviceProblem& p, cudaStream_t stream) {
  const AttentionShape& s = p.shape;
  const size_t need = static_cast<size_t>(s.batch * s.num_heads * s.seq_len_q) *
                      static_cast<size_t>(s.seq_len_k);
  if (p.scratch.size() < need) {
    size_t free_bytes = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    require(need * sizeof(float) <= free_bytes, "seq_len_k", s.seq_len_k,
            "c01 keeps the whole score matrix: " + std::to_string(need * sizeof(float)) +
                " bytes, more than the device's free " + std::to_string(free_bytes));
    p.scratch.allocate(need);
  }
  const Grid g = attention_grid(blocks_of(s.seq_len_q, kThreads), s.num_heads, s.batch);
  c01_naive_dense<<<dim3(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z)),
                    kThreads, 0, stream>>>(p.args(), p.scratch.ptr());
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c01_naive_dense(const Pattern& p) { return p.spec.kind == PatternKind::dense; }
}  // namespace entry
}  // namespace sparseattn
