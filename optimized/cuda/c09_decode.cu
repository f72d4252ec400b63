// c09 — decoding against a KV cache (contract §2.11) or paged KV (§2.12), read in place:
// a few queries (L_q <= 16 is its target; any L_q is correct) against a long cache.
//
// Contract: matches a1_dense_masked through the layout walk (api/layout_walk.h: each
// element's filled keys, the spec materialized for (L_q, cache_seqlens[b])) at kTolFloat32
// (float32 inputs) or, on the bf16-rounded inputs, kTolBfloat16 (bf16 inputs, widened to
// float32 in shared memory: the arithmetic is float32 either way). Serves `dense`, `window`
// (any dilation, left/right) and `chunked`, causal or not, no key padding — the patterns of
// its CPU twin cpu_k09_decode (optimized/cpu/k09_decode.cpp) — on a contiguous cache [B,
// H_kv, L_cache, d], on page pools [num_pages, H_kv, page_size, d] through block_table, or
// on plain [B, H_kv, L_k, d] inputs (every element filled to L_k). Grouped heads, softcap,
// ALiBi [H_q] / [B, H_q] and sinks (kModern), the modifiers in float32. Slots past
// cache_seqlens[b] and table entries of pages past it are never read. Deterministic: no
// atomics, the merge sums the splits in order. head_dim, head_dim_v in [1, 256].
// Checked by tests/cuda/cuda_kernels_test.cpp (c09/CudaDecodeCache.*, c09/CudaVsOracle.*)
// when a device is present.
//
// How (as the CPU twin): one thread block per (element b, kv head, split of the element's
// keys, group of 32 rows). Its rows are the g query heads of the kv head × the L_q
// queries (row hh·L_q + i), so each K/V row of the split is read once for all of them
// (gather_f32.cuh) whenever g·L_q <= 32 — decode's case; beyond, each 32-row group reads
// the split again. Each row's keys are one progression (decode_plan.h); a split is a fixed
// run of 256 keys of the element's span (decode_plan.h: plan_decode), so a 32k-key cache
// gives 128 blocks per kv head. Every split writes its rows' normalized o and lse to a
// workspace, and decode_merge_kernel combines them by the lse algebra (tiling.h:
// merge_lse, merge_weight), in split order; the sink σ_h enters there, once:
// lse = log(exp(σ) + Σ_s exp(lse_s)) (contract §2.9). A paged key is found per staged slot:
// block_table[b][t / page_size], slot t mod page_size.
// Measured: not yet measured: no GPU run so far (docs/cuda.md, "Results").
#include <cuda_bf16.h>

#include "optimized/cuda/decode_plan.h"
#include "optimized/cuda/gather_f32.cuh"
#include "optimized/cuda/launchers.h"

namespace sparseattn {
namespace cuda {

namespace {

struct DecodeArgs {
  AttnArgs a;
  const int32_t* seqlens = nullptr;      // [B]
  const int32_t* table = nullptr;        // [B, max_pages], paged only
  const DecodeRowKeys* rows = nullptr;   // [B, L_q]
  const DecodeItem* items = nullptr;
  const int32_t* item_start = nullptr;   // [B + 1]
  int64_t max_pages = 0, page_size = 0;
  int64_t kv_rows = 0;                   // rows per (unit, kv head): L_cache, L_k or page_size
  bool paged = false;
  int64_t R = 0;                         // rows per kv head: g · L_q
  float* ws_o = nullptr;                 // [items, H_kv, R, d_v]
  float* ws_lse = nullptr;               // [items, H_kv, R]
};

template <class T>
__global__ void __launch_bounds__(GatherF32Block<T>::kThreads) decode_kernel(DecodeArgs x) {
  using Block = GatherF32Block<T>;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ DecodeRowKeys row_keys[Block::kRows];
  __shared__ int64_t row_q[Block::kRows], row_pos[Block::kRows];
  __shared__ float row_slope[Block::kRows];
  const AttnArgs& a = x.a;
  const DecodeItem it = x.items[blockIdx.x];
  const int64_t kvh = blockIdx.y, b = it.b;
  const int64_t r0 = static_cast<int64_t>(blockIdx.z) * Block::kRows;
  const int rows = static_cast<int>(min64(Block::kRows, x.R - r0));
  const int64_t n = x.seqlens[b], Lq = a.seq_len_q;
  if (threadIdx.x < rows) {  // the rows' heads, queries, keys, positions: once per block
    const int64_t rr = r0 + threadIdx.x, hh = rr / Lq, i = rr - hh * Lq, h = kvh * a.group + hh;
    row_keys[threadIdx.x] = x.rows[b * Lq + i];
    row_q[threadIdx.x] = ((b * a.num_heads + h) * Lq + i) * a.head_dim;
    row_pos[threadIdx.x] = i + n - Lq;  // p, contract §2.11
    row_slope[threadIdx.x] = a.alibi != nullptr ? a.slope(b, h) : 0.f;
  }
  __syncthreads();
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  Block block(smem, a.head_dim, a.head_dim_v, a.div_d, a.div_dv, rows, a.scale,
              [&](int r) { return q + row_q[r]; });
  for (int64_t j = it.j0; j < it.j1; j += Block::kSlots) {
    const int count = static_cast<int>(min64(Block::kSlots, it.j1 - j));
    block.stage(count, k, v, [&](int c) -> int64_t {
      const int64_t t = j + c;
      if (!x.paged) return (b * a.num_kv_heads + kvh) * x.kv_rows + t;
      const int64_t page = x.table[b * x.max_pages + t / x.page_size];  // contract §2.12
      return (page * a.num_kv_heads + kvh) * x.page_size + t % x.page_size;
    });
    block.visit(
        count, [&](int r, int c) { return decode_row_allows(row_keys[r], j + c) ? 1.f : 0.f; },
        [&](int r, int c, float s) {
          if (a.softcap > 0.f) s = a.softcap * tanhf(s / a.softcap);  // contract §2.8
          if (a.alibi != nullptr) {
            const int64_t dist = row_pos[r] > j + c ? row_pos[r] - (j + c) : (j + c) - row_pos[r];
            s -= row_slope[r] * static_cast<float>(dist);
          }
          return s;
        });
  }
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * a.num_kv_heads + kvh) * x.R + r0;
  block.finish([&](int r) { return x.ws_o + (base + r) * a.head_dim_v; },
               [&](int r) { return x.ws_lse + base + r; });
}

// One thread block per (kv head, element), one thread per (row, column) of its outputs:
// the element's splits merged in order, the sink once (contract §2.9). An element without
// splits (n_b = 0, or no row with a key) ends at o = 0, lse = −inf (σ_h with a sink).
__global__ void __launch_bounds__(128) decode_merge_kernel(DecodeArgs x) {
  const AttnArgs& a = x.a;
  const int64_t kvh = blockIdx.x, b = blockIdx.y, Lq = a.seq_len_q;
  const int64_t first = x.item_start[b], parts = x.item_start[b + 1] - first;
  const int64_t stride = a.num_kv_heads * x.R;  // between two splits' rows
  const int dv = static_cast<int>(a.head_dim_v);
  for (int64_t e = threadIdx.x; e < x.R * dv; e += blockDim.x) {
    const int64_t rr = e / dv, d = e - rr * dv;
    const int64_t hh = rr / Lq, i = rr - hh * Lq, h = kvh * a.group + hh;
    const int64_t at = first * stride + kvh * x.R + rr;
    float lse = merge_lse(x.ws_lse + at, parts, stride);
    if (a.sinks != nullptr) {
      const float sigma = a.sinks[h];
      const float hi = fmaxf(lse, sigma), lo = fminf(lse, sigma);
      lse = lo == -INFINITY ? hi : hi + log1pf(expf(lo - hi));
    }
    float o = 0.f;
    for (int64_t s = 0; s < parts; ++s)
      o += merge_weight(x.ws_lse[at + s * stride], lse) * x.ws_o[(at + s * stride) * dv + d];
    const int64_t row = (b * a.num_heads + h) * Lq + i;
    a.o[row * dv + d] = o;
    if (d == 0) a.lse[row] = lse;
  }
}

template <class T>
void launch_decode(DeviceProblem& p, cudaStream_t stream, const char* name) {
  using Block = GatherF32Block<T>;
  const AttentionShape& s = p.shape;
  require(p.host_pattern != nullptr && decode_serves(*p.host_pattern), "pattern",
          p.host_pattern != nullptr ? describe(p.host_pattern->spec) : std::string("none"),
          std::string(name) + " serves dense, window, chunked (one spec, no key padding)");
  require(s.head_dim <= Block::kMaxHeadDim, "head_dim", s.head_dim, "the CUDA decode kernel takes 1 .. 256");
  require(s.head_dim_v <= Block::kMaxHeadDim, "head_dim_v", s.head_dim_v, "the CUDA decode kernel takes 1 .. 256");
  const int64_t B = s.batch, Hkv = s.num_kv_heads, R = s.group() * s.seq_len_q;
  const int64_t row_groups = blocks_of(R, Block::kRows);
  require(Hkv <= 65535, "num_kv_heads", Hkv, "the CUDA decode kernel launches one grid row per kv head: 1 .. 65535");
  require(row_groups <= 65535, "seq_len_q", s.seq_len_q,
          "the CUDA decode kernel holds at most 65535 x 32 rows (group x seq_len_q) per kv head");
  require(B <= 65535, "batch", B, "the CUDA decode kernel launches one merge block per element: 1 .. 65535");

  // The plan and the plain inputs' lengths, uploaded once per problem (and split).
  if (p.decode_split_forced != decode_split_keys()) {
    std::vector<int64_t> seqlens = p.cache ? p.cache->cache_seqlens : std::vector<int64_t>(B, s.seq_len_k);
    const DecodePlan plan = plan_decode(p.host_pattern->spec, s.seq_len_q, seqlens,
                                        Hkv * R * (s.head_dim_v + 1), decode_split_keys());
    p.decode_rows.upload(plan.rows);
    p.decode_items.upload(plan.items);
    p.decode_item_start.upload(plan.item_start);
    p.decode_items_count = static_cast<int64_t>(plan.items.size());
    if (!p.cache) p.cache_seqlens.upload(std::vector<int32_t>(seqlens.begin(), seqlens.end()));
    const auto ws_rows = static_cast<size_t>(max64(p.decode_items_count, 1) * Hkv * R);
    if (p.split_lse.size() < ws_rows) {
      p.split_o.allocate(ws_rows * static_cast<size_t>(s.head_dim_v));
      p.split_lse.allocate(ws_rows);
    }
    p.decode_split_forced = decode_split_keys();
  }
  DecodeArgs x;
  x.a = p.args();
  x.seqlens = p.cache_seqlens.ptr();
  x.rows = p.decode_rows.ptr();
  x.items = p.decode_items.ptr();
  x.item_start = p.decode_item_start.ptr();
  x.R = R;
  x.ws_o = p.split_o.ptr();
  x.ws_lse = p.split_lse.ptr();
  if (p.cache && p.cache->paged()) {
    x.paged = true;
    x.table = p.block_table.ptr();
    x.max_pages = p.cache->max_pages;
    x.page_size = p.cache->page_size;
    x.kv_rows = p.cache->page_size;
  } else {
    x.kv_rows = p.cache ? p.cache->seq_len_cache : s.seq_len_k;
  }
  if (p.decode_items_count > 0) {
    const size_t smem = Block::smem_bytes(s.head_dim, s.head_dim_v);
    configure_shared_memory(reinterpret_cast<const void*>(&decode_kernel<T>), smem, "head_dim", s.head_dim);
    decode_kernel<T><<<dim3(static_cast<unsigned>(p.decode_items_count), static_cast<unsigned>(Hkv),
                            static_cast<unsigned>(row_groups)),
                       Block::kThreads, smem, stream>>>(x);
    CUDA_CHECK_LAUNCH();
  }
  decode_merge_kernel<<<dim3(static_cast<unsigned>(Hkv), static_cast<unsigned>(B)), 128, 0, stream>>>(x);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_cuda_c09_decode_f32(DeviceProblem& p, cudaStream_t stream) {
  launch_decode<float>(p, stream, "cuda_c09_decode_f32");
}
void launch_cuda_c09_decode_bf16(DeviceProblem& p, cudaStream_t stream) {
  launch_decode<__nv_bfloat16>(p, stream, "cuda_c09_decode_bf16");
}

}  // namespace cuda

namespace entry {
bool serves_cuda_c09_decode_f32(const Pattern& p) { return cuda::decode_serves(p); }
bool serves_cuda_c09_decode_bf16(const Pattern& p) { return cuda::decode_serves(p); }
}  // namespace entry
}  // namespace sparseattn
