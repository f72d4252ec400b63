// c06 — Longformer: sliding window plus global tokens (Beltagy et al. 2020, §3.1).
//
// Contract: matches a1_dense_masked at kTolFloat32 (float32) or, on the same rounded
// inputs, kTolBfloat16 (bf16); pattern kind `longformer`, non-causal, with
// seq_len_q == seq_len_k (window, dilation, global positions, key padding); head_dim,
// head_dim_v in [1, 256]. Causal Longformer (where materialize() also cuts global keys
// and global rows at the query's position) goes to c08.
//
// What changed since c05, and why: a global token attends every key and every query
// attends it (contract §3: window(i, j) or i in G or j in G). A query block holding a global
// row must visit every key chunk; any other block visits its band's chunks plus the
// chunks holding global keys that the band's chunks do not already cover
// (tiling.h: next_global_chunk), each chunk once, so a global key inside the window is
// counted once (set semantics, contract §2). The global positions come from the uploaded
// pattern, sorted once on the host. Blocks are contiguous (dilation is filtered by
// band_allows, not by residue classes as in c05): global rows need every key anyway.
#include "optimized/cuda/launch.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {

template <class Core>
__global__ void __launch_bounds__(Core::kThreads) longformer_kernel(AttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t i0 = blockIdx.x * static_cast<int64_t>(Core::kBr);
  const Strided rows{i0, 1, min64(Core::kBr, a.seq_len_q - i0)};
  Core block(a, smem, b, h, rows);
  auto allowed = [&](int64_t i, int64_t j) {
    return band_allows(a.band, i, j) || a.is_global[i] != 0 || a.is_global[j] != 0;
  };
  bool global_row = false;  // the same answer in every thread: a uniform branch
  for (int64_t r = 0; r < rows.count; ++r) global_row = global_row || a.is_global[i0 + r] != 0;

  if (global_row) {
    for (int64_t k0 = 0; k0 < a.seq_len_k; k0 += Core::kBc)
      block.visit(Strided{k0, 1, min64(Core::kBc, a.seq_len_k - k0)}, allowed);
  } else {
    const ChunkRange band = band_chunks(a.band, i0, i0 + rows.count, Core::kBc);
    for (int64_t k0 = band.begin; k0 < band.end; k0 += Core::kBc)
      block.visit(Strided{k0, 1, min64(Core::kBc, band.end - k0)}, allowed);
    int64_t cursor = 0;
    for (int64_t k0 = next_global_chunk(a.global_sorted, a.num_global, &cursor, band, Core::kBc); k0 >= 0;
         k0 = next_global_chunk(a.global_sorted, a.num_global, &cursor, band, Core::kBc))
      block.visit(Strided{k0, 1, min64(Core::kBc, a.seq_len_k - k0)}, allowed);
  }
  block.finish();
}

template <DType dtype>
void launch_longformer(DeviceProblem& p, cudaStream_t stream) {
  using Core = typename CoreOf<dtype>::type;
  launch_flash<Core>(longformer_kernel<Core>, p, blocks_of(p.shape.seq_len_q, Core::kBr), stream);
}

bool serves_longformer(const Pattern& p) {
  return p.spec.kind == PatternKind::longformer && !p.spec.causal &&
         p.sizes.seq_len_q == p.sizes.seq_len_k;
}

}  // namespace

void launch_cuda_c06_longformer_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_longformer<DType::float32>(p, stream);
}
void launch_cuda_c06_longformer_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_longformer<DType::bfloat16>(p, stream);
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c06_longformer_f32(const Pattern& p) { return cuda::serves_longformer(p); }
bool serves_cuda_c06_longformer_bf16(const Pattern& p) { return cuda::serves_longformer(p); }
}  // namespace entry
}  // namespace sparseattn
