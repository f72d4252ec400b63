#include "optimized/cuda/device_problem.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <vector>

namespace sparseattn {
namespace cuda {

namespace {

std::vector<unsigned char> convert(const Tensor<float>& x, DType dtype) {
  const size_t n = x.data.size();
  std::vector<unsigned char> bytes;
  switch (dtype) {
    case DType::float32:
      bytes.resize(n * sizeof(float));
      std::memcpy(bytes.data(), x.data.data(), bytes.size());
      break;
    case DType::float16: {
      std::vector<__half> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = __float2half_rn(x.data[i]);
      bytes.resize(n * sizeof(__half));
      std::memcpy(bytes.data(), h.data(), bytes.size());
      break;
    }
    case DType::bfloat16: {
      std::vector<__nv_bfloat16> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16_rn(x.data[i]);
      bytes.resize(n * sizeof(__nv_bfloat16));
      std::memcpy(bytes.data(), h.data(), bytes.size());
      break;
    }
    case DType::float64:
      throw InvalidArgument("dtype", dtype_name(dtype), "CUDA kernels take float32, float16 or bfloat16");
  }
  return bytes;
}

}  // namespace

AttnArgs DeviceProblem::args() const {
  AttnArgs a;
  a.q = q.ptr();
  a.k = k.ptr();
  a.v = v.ptr();
  a.o = o.ptr();
  a.lse = lse.ptr();
  a.batch = shape.batch;
  a.num_heads = shape.num_heads;
  a.seq_len_q = shape.seq_len_q;
  a.seq_len_k = shape.seq_len_k;
  a.head_dim = shape.head_dim;
  a.head_dim_v = shape.head_dim_v;
  a.scale = scale;
  const auto pad16 = [](int64_t n) { return (n + 15) / 16 * 16; };
  a.div_d = make_fast_div(shape.head_dim);
  a.div_dv = make_fast_div(shape.head_dim_v);
  a.div_dp = make_fast_div(pad16(shape.head_dim));
  a.div_dvp = make_fast_div(pad16(shape.head_dim_v));
  pattern.bind(a);
  a.split_o = split_o.ptr();
  a.split_lse = split_lse.ptr();
  return a;
}

void DeviceProblem::poison_outputs() const {
  // 0xFF bytes are a NaN in float32.
  CUDA_CHECK(cudaMemset(o.ptr(), 0xFF, o.size() * sizeof(float)));
  CUDA_CHECK(cudaMemset(lse.ptr(), 0xFF, lse.size() * sizeof(float)));
}

DeviceProblem upload_problem(const Problem& problem, DType dtype) {
  require_device("the CUDA kernels");
  DeviceProblem d;
  d.shape = problem.shape;
  d.dtype = dtype;
  d.scale = static_cast<float>(problem.scale);
  d.q.upload(convert(problem.q32, dtype));
  d.k.upload(convert(problem.k32, dtype));
  d.v.upload(convert(problem.v32, dtype));
  const AttentionShape& s = problem.shape;
  d.o.allocate(static_cast<size_t>(s.batch * s.num_heads * s.seq_len_q * s.head_dim_v));
  d.lse.allocate(static_cast<size_t>(s.batch * s.num_heads * s.seq_len_q));
  d.pattern = upload_pattern(*problem.pattern);
  return d;
}

void download_outputs(const DeviceProblem& problem, Output& out) {
  const AttentionShape& s = problem.shape;
  out.o32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v});
  out.lse32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q});
  problem.o.download(out.o32.ptr(), out.o32.data.size());
  problem.lse.download(out.lse32.ptr(), out.lse32.data.size());
}

void run_on_device(const Problem& problem, Output& out, DType dtype, LaunchFn launch,
                   const char* name) {
  require_device(name);
  DeviceProblem d = upload_problem(problem, dtype);
  d.poison_outputs();
  launch(d, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());  // faults inside the kernel surface here
  download_outputs(d, out);
}

Tensor<double> round_like_device(const Tensor<double>& x, DType dtype) {
  Tensor<double> y = x;
  for (double& e : y.data) {
    const float f = static_cast<float>(e);
    switch (dtype) {
      case DType::float64: break;
      case DType::float32: e = f; break;
      case DType::float16: e = __half2float(__float2half_rn(f)); break;
      case DType::bfloat16: e = __bfloat162float(__float2bfloat16_rn(f)); break;
    }
  }
  return y;
}

}  // namespace cuda
}  // namespace sparseattn
