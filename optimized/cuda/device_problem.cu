#include "optimized/cuda/device_problem.h"

#include "core/bfloat16.h"
#include "registry/float32_guard.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cmath>
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
      // core/bfloat16.h's round to nearest even: the rounding the CPU bf16 entries and
      // round_like_device use too (bit patterns, the layout of __nv_bfloat16).
      std::vector<uint16_t> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = float_to_bfloat16(x.data[i]);
      static_assert(sizeof(__nv_bfloat16) == sizeof(uint16_t), "bf16 is 16 bits");
      bytes.resize(n * sizeof(uint16_t));
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
  a.num_kv_heads = shape.num_kv_heads;
  a.group = shape.num_heads / shape.num_kv_heads;
  a.softcap = softcap;
  a.alibi = alibi.ptr();
  a.alibi_per_batch = alibi_per_batch;
  a.sinks = sinks.ptr();
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

DeviceProblem upload_problem(const Problem& problem, DType dtype, const char* kernel_name) {
  require_device(kernel_name);
  // contract §4.5: the kernels accumulate in float32, so the CPU ladder's rule applies as
  // is (refuse a scale or input float32 cannot hold, fold a tiny scale into q in float64);
  // float16 inputs must also fit float16 (65504), and a folded q would underflow it.
  Float32Plan plan;
  plan_float32(problem, kernel_name, plan);
  if (dtype == DType::float16) {
    constexpr double kHalfMax = 65504.0;
    const struct { const char* name; const Tensor<double>* t; } inputs[] = {
        {"q", &problem.q}, {"k", &problem.k}, {"v", &problem.v}};
    for (const auto& in : inputs) {
      double m = 0.0;
      for (double x : in.t->data) m = std::max(m, std::fabs(x));
      require(m <= kHalfMax, in.name, "a tensor with max |x| = " + to_text(m),
              "|x| <= 65504, float16's largest finite value, for the float16-input kernel " +
                  std::string(kernel_name) + "; use its float32 or bfloat16 variant");
    }
    require(plan.q32 == &problem.q32, "scale", to_text(problem.scale),
            "|scale| >= 1.2e-38 for the float16-input kernel " + std::string(kernel_name) +
                " (q·scale would underflow float16); use its float32 or bfloat16 variant");
  }
  DeviceProblem d;
  d.shape = problem.shape;
  d.dtype = dtype;
  d.scale = plan.scale32;
  d.q.upload(convert(*plan.q32, dtype));
  d.k.upload(convert(problem.k32, dtype));
  d.v.upload(convert(problem.v32, dtype));
  const AttentionShape& s = problem.shape;
  // Query rows of the output: B·L_q, or a packed problem's total_q (its seq_len_q).
  const int64_t rows_q = problem.varlen ? s.seq_len_q : s.batch * s.seq_len_q;
  d.o.allocate(static_cast<size_t>(rows_q * s.num_heads * s.head_dim_v));
  d.lse.allocate(static_cast<size_t>(rows_q * s.num_heads));
  d.varlen = problem.varlen;
  d.pattern = upload_pattern(*problem.pattern);
  // contract §2.8-§2.9: float32 copies of the modifiers (validated by make_problem).
  const ScoreMods& m = problem.mods;
  auto to_f32 = [](const Tensor<double>& t) {
    return std::vector<float>(t.data.begin(), t.data.end());
  };
  if (m.softcap) d.softcap = static_cast<float>(*m.softcap);
  if (m.alibi_slopes) {
    d.alibi.upload(to_f32(*m.alibi_slopes));
    d.alibi_per_batch = m.alibi_slopes->rank() == 2;
  }
  if (m.sinks) d.sinks.upload(to_f32(*m.sinks));
  d.host_pattern = problem.pattern;
  if (problem.cache) {  // contract §2.11–§2.12 (validated by make_cache_problem)
    const KvCache& c = *problem.cache;
    require(c.num_pages <= INT32_MAX, "k", c.num_pages,
            "the CUDA decode kernel indexes pages with int32: at most 2^31-1 pages");
    d.cache = c;
    d.cache_seqlens.upload(std::vector<int32_t>(c.cache_seqlens.begin(), c.cache_seqlens.end()));
    if (c.paged()) {
      std::vector<int32_t> table(c.block_table.size(), -1);
      for (int64_t b = 0; b < c.batch(); ++b)
        for (int64_t m = 0; m * c.page_size < c.seq_len_k(b); ++m)
          table[static_cast<size_t>(b * c.max_pages + m)] =
              static_cast<int32_t>(c.block_table[static_cast<size_t>(b * c.max_pages + m)]);
      d.block_table.upload(table);
    }
  }
  return d;
}

void download_outputs(const DeviceProblem& problem, Output& out) {
  const AttentionShape& s = problem.shape;
  if (problem.varlen) {  // contract §2.10: packed o, lse [H, total_q] (FlashAttention's varlen lse)
    out.o32 = Tensor<float>({s.seq_len_q, s.num_heads, s.head_dim_v});
    out.lse32 = Tensor<float>({s.num_heads, s.seq_len_q});
  } else {
    out.o32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v});
    out.lse32 = Tensor<float>({s.batch, s.num_heads, s.seq_len_q});
  }
  problem.o.download(out.o32.ptr(), out.o32.data.size());
  problem.lse.download(out.lse32.ptr(), out.lse32.data.size());
}

void run_on_device(const Problem& problem, Output& out, DType dtype, LaunchFn launch,
                   const char* name) {
  require_device(name);
  DeviceProblem d = upload_problem(problem, dtype, name);
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
      case DType::bfloat16: e = bfloat16_to_float(float_to_bfloat16(f)); break;
    }
  }
  return y;
}

}  // namespace cuda
}  // namespace sparseattn
