// Random inputs generated on the device, for benchmarks at sizes where building the
// float64 Problem on the host would cost gigabytes and seconds (seq_len 65536: q, k, v
// are 1.6 GB in float64). Entry e of a tensor is a pure function of (seed, tensor, e)
// through the SplitMix64 mixer of prng.h, so any run reproduces any element.
#include "optimized/cuda/device_problem.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "optimized/cuda/tiling.h"
#include "pattern/prng.h"

namespace sparseattn {
namespace cuda {

namespace {

template <class T>
__device__ T from_float(float x);
template <>
__device__ float from_float<float>(float x) { return x; }
template <>
__device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Uniform in [-1, 1): the top 24 bits of the mixed counter.
template <class T>
__global__ void fill_uniform(T* x, int64_t n, uint64_t key) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(prng_bits(key, static_cast<uint64_t>(e)) >> 40) * 0x1.0p-24f;
    x[e] = from_float<T>(2.f * u - 1.f);
  }
}

void fill(DeviceBuffer<unsigned char>& buf, int64_t n, DType dtype, uint64_t key) {
  const size_t bytes = dtype == DType::float32 ? 4 : 2;
  buf.allocate(static_cast<size_t>(n) * bytes);
  const unsigned grid = static_cast<unsigned>(min64(blocks_of(n, 256), 65536));
  switch (dtype) {
    case DType::float32: fill_uniform<<<grid, 256>>>(reinterpret_cast<float*>(buf.ptr()), n, key); break;
    case DType::float16: fill_uniform<<<grid, 256>>>(reinterpret_cast<__half*>(buf.ptr()), n, key); break;
    case DType::bfloat16:
      fill_uniform<<<grid, 256>>>(reinterpret_cast<__nv_bfloat16*>(buf.ptr()), n, key);
      break;
    case DType::float64:
      throw InvalidArgument("dtype", "float64", "CUDA kernels take float32, float16 or bfloat16");
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

DeviceProblem random_device_problem(const Pattern& pattern, int64_t batch, int64_t head_dim,
                                    int64_t head_dim_v, DType dtype, uint64_t seed) {
  require_device("random_device_problem");
  require(batch >= 1, "batch", batch, "must be >= 1");
  require(head_dim >= 1, "head_dim", head_dim, "must be >= 1");
  require(head_dim_v >= 1, "head_dim_v", head_dim_v, "must be >= 1");
  const PatternSizes& z = pattern.sizes;
  require(!pattern.has_key_padding() || z.batch == batch, "batch", batch,
          "must equal the key_padding_mask batch (" + std::to_string(z.batch) + ")");
  DeviceProblem d;
  d.shape = AttentionShape{batch, z.num_heads, z.seq_len_q, z.seq_len_k, head_dim, head_dim_v};
  d.shape.num_kv_heads = z.num_heads;  // benchmarks: one kv head per query head
  d.dtype = dtype;
  d.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  const int64_t bh = batch * z.num_heads;
  fill(d.q, bh * z.seq_len_q * head_dim, dtype, prng_stream_key(seed, 0, 0));
  fill(d.k, bh * z.seq_len_k * head_dim, dtype, prng_stream_key(seed, 0, 1));
  fill(d.v, bh * z.seq_len_k * head_dim_v, dtype, prng_stream_key(seed, 0, 2));
  d.o.allocate(static_cast<size_t>(bh * z.seq_len_q * head_dim_v));
  d.lse.allocate(static_cast<size_t>(bh * z.seq_len_q));
  d.pattern = upload_pattern(pattern);
  d.host_pattern = &pattern;
  CUDA_CHECK(cudaDeviceSynchronize());
  return d;
}

}  // namespace cuda
}  // namespace sparseattn
