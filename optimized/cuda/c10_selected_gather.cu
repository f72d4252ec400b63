// c10 — token-level selected attention (contract §3.16), float32: each query reads exactly
// the keys its row of kv_indices lists, gathered.
//
// Contract: matches a1_dense_masked at kTolFloat32 (core/numerics.h) on float32 inputs;
// pattern kind `selected` — every B_sel (1 or B), H_sel (1, H_kv, H_q), duplicates once or
// count, causal, key padding — and grouped kv heads (registry features kGqa | kSelection,
// those of its CPU twin cpu_k08_selected_gather); no softcap, ALiBi or sinks. A row whose
// list keeps no key has o = 0, lse = −inf. head_dim, head_dim_v in [1, 256]. Deterministic
// (no atomics; each output row has one owner summing its list in order). Checked by
// tests/cuda/cuda_kernels_test.cpp (c10/CudaSelected.*) when a device is present.
//
// How: the table is prepared once per problem on the host (packed_pattern.h: PackedPattern::
// sel_*): −1 slots dropped, causal applied, each distinct key once with its multiplicity.
// One thread block per (query i, the heads sharing its list, batch element): the g query
// heads of a kv head when H_sel <= H_kv (DSA's one list for all heads, NSA's one per kv
// head), else one head. It stages the listed K and V rows 32 at a time and folds them into
// every sharing head at once (gather_f32.cuh), the multiplicity as the slot's weight, key
// padding as weight 0. With one head per list (H_sel = H_q) three of the four warps idle:
// a known cost, not yet measured.
// Block-level selected (`selected-blocks`, contract §3.17) needs no kernel of its own: its
// materialized layout lists the chosen key tiles (whole tiles when b_q = b_k = the tile,
// otherwise bitmasks), which c08 reads like any layout (c08/CudaSelectedBlocks.*).
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results").
#include "optimized/cuda/gather_f32.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {

using Block = GatherF32Block<float>;

__global__ void __launch_bounds__(Block::kThreads) selected_kernel(AttnArgs a, int64_t share, int64_t row_groups) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t i = blockIdx.x, b = blockIdx.z;
  const int64_t unit = blockIdx.y / row_groups, group_of_rows = blockIdx.y - unit * row_groups;
  const int64_t h0 = unit * share + group_of_rows * Block::kRows;  // first query head of the block
  const int rows = static_cast<int>(min64(Block::kRows, share - group_of_rows * Block::kRows));
  const int64_t hk = h0 / a.group;  // every head of the block reads this kv head
  const int64_t sel_row = a.sel_heads == 1 ? 0 : h0 / (a.num_heads / a.sel_heads);  // contract §3.16
  const int64_t x = ((a.sel_batch == 1 ? 0 : b) * a.sel_heads + sel_row) * a.seq_len_q + i;
  const int64_t begin = a.sel_row_ptr[x], end = a.sel_row_ptr[x + 1];
  const float* q = static_cast<const float*>(a.q);
  const float* k = static_cast<const float*>(a.k);
  const float* v = static_cast<const float*>(a.v);
  Block block(smem, a.head_dim, a.head_dim_v, a.div_d, a.div_dv, rows, a.scale,
              [&](int r) { return q + a.offset(b, h0 + r, a.seq_len_q, i, a.head_dim); });
  if (a.query_real(b, i)) {  // a padded query row stays empty (contract §2.4)
    for (int64_t e0 = begin; e0 < end; e0 += Block::kSlots) {
      const int count = static_cast<int>(min64(Block::kSlots, end - e0));
      block.stage(count, k, v, [&](int c) -> int64_t {
        return (b * a.num_kv_heads + hk) * a.seq_len_k + a.sel_key[e0 + c];
      });
      block.visit(
          count,
          [&](int, int c) {
            const int64_t j = a.sel_key[e0 + c];
            if (a.key_valid != nullptr && a.key_valid[b * a.seq_len_k + j] == 0) return 0.f;
            return static_cast<float>(a.sel_count[e0 + c]);  // 1, or the times listed (count)
          },
          [](int, int, float s) { return s; });
    }
  }
  block.finish([&](int r) { return a.o + a.offset(b, h0 + r, a.seq_len_q, i, a.head_dim_v); },
               [&](int r) { return a.lse + (b * a.num_heads + h0 + r) * a.seq_len_q + i; });
}

}  // namespace

void launch_cuda_c10_selected_gather_f32(DeviceProblem& p, cudaStream_t stream) {
  const AttentionShape& s = p.shape;
  require(p.host_pattern != nullptr && p.host_pattern->spec.kind == PatternKind::selected, "pattern",
          p.host_pattern != nullptr ? describe(p.host_pattern->spec) : std::string("none"),
          "cuda_c10_selected_gather_f32 serves selected");
  require(s.head_dim <= Block::kMaxHeadDim, "head_dim", s.head_dim, "the CUDA gather kernel takes 1 .. 256");
  require(s.head_dim_v <= Block::kMaxHeadDim, "head_dim_v", s.head_dim_v, "the CUDA gather kernel takes 1 .. 256");
  const int64_t g = s.group();
  // Heads that share one list: the whole group unless every query head has its own.
  const int64_t share = p.pattern.packed.sel_heads == s.num_heads && g > 1 ? 1 : g;
  const int64_t row_groups = blocks_of(share, Block::kRows);
  const Grid grid = attention_grid(s.seq_len_q, s.num_heads / share * row_groups, s.batch);
  const size_t smem = Block::smem_bytes(s.head_dim, s.head_dim_v);
  configure_shared_memory(reinterpret_cast<const void*>(&selected_kernel), smem, "head_dim", s.head_dim);
  selected_kernel<<<dim3(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y), static_cast<unsigned>(grid.z)),
                    Block::kThreads, smem, stream>>>(p.args(), share, row_groups);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c10_selected_gather_f32(const Pattern& p) { return p.spec.kind == PatternKind::selected; }
}  // namespace entry
}  // namespace sparseattn
