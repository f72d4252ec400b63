// A Problem (registry/registry.h) on the device: inputs converted to the kernel's dtype
// and uploaded once, float32 outputs, and the uploaded pattern. Tests and the CLI go
// through run_on_device(); benchmarks upload once and time launch() alone, so neither
// conversion nor copies are ever timed.
#pragma once

#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "optimized/cuda/decode_plan.h"
#include "optimized/cuda/device_pattern.h"
#include "optimized/cuda/device_runtime.h"
#include "optimized/cuda/kernel_args.h"
#include "optimized/cuda/varlen_plan.h"
#include "registry/registry.h"

namespace sparseattn {
namespace cuda {

struct DeviceProblem {
  AttentionShape shape;
  DType dtype = DType::float32;        // of q, k, v on the device
  float scale = 0.f;
  DeviceBuffer<unsigned char> q, k, v; // elements of `dtype`
  DeviceBuffer<float> o, lse;          // [B,H,Lq,Dv], [B,H,Lq]
  DeviceBuffer<float> scratch;         // c01's score matrix, allocated on first use
  DeviceBuffer<float> split_o, split_lse;  // block-sparse split-K parts, allocated on first use
  DevicePattern pattern;
  // contract §2.8-§2.9, in float32 (the modifiers are never rounded further): softcap 0 =
  // none; slopes [H] or [B, H]; sinks [H]; empty buffers = none.
  float softcap = 0.f;
  DeviceBuffer<float> alibi, sinks;
  bool alibi_per_batch = false;
  // contract §2.11–§2.12, read by c09 alone (the registry hands a cache problem only to a
  // kernel listing kKvCache): the cache's description on the host, and on the device
  // cache_seqlens [B] and block_table [B, max_pages] as int32 (entries of pages past an
  // element's length are never read and are uploaded as −1). Unset / empty: plain inputs.
  std::optional<KvCache> cache;
  DeviceBuffer<int32_t> cache_seqlens, block_table;
  // The Pattern uploaded, on the host, for launch decisions that need its spec (c09's rows,
  // c10's list width). It outlives the DeviceProblem (the caller's Problem or benchmark).
  const Pattern* host_pattern = nullptr;
  // c09's plan (decode_plan.h) on the device, built by its first launch (and again when the
  // forced split changes): each row's keys, the work items, each element's first item.
  DeviceBuffer<DecodeRowKeys> decode_rows;
  DeviceBuffer<DecodeItem> decode_items;
  DeviceBuffer<int32_t> decode_item_start;
  int64_t decode_items_count = 0, decode_split_forced = -1;

  // contract §2.10, read by c11 alone (the registry hands a packed problem only to a kernel
  // listing kVarlen): the cu_seqlens on the host; o is then [total_q, H_q, d_v] and lse
  // [H_q, total_q] (shape.seq_len_q = total_q). Unset: plain inputs. c11's plan
  // (varlen_plan.h) on the device, built by its first launch: each packed row's keys, the
  // tiles and both cu_seqlens (int64).
  std::optional<Varlen> varlen;
  DeviceBuffer<DecodeRowKeys> varlen_rows;
  DeviceBuffer<VarlenTile> varlen_tiles;
  DeviceBuffer<int64_t> varlen_cu_q, varlen_cu_k;
  int64_t varlen_tiles_count = -1;  // -1: not planned yet

  AttnArgs args() const;
  // Fills o and lse with NaN so a row a kernel forgets to write fails the checker.
  void poison_outputs() const;
};

using LaunchFn = void (*)(DeviceProblem& problem, cudaStream_t stream);

// Converts q32/k32/v32 to `dtype` (round to nearest even) and uploads; uploads the pattern.
// Throws RuntimeError("no CUDA device: ...") without a device, and InvalidArgument naming
// `scale`, `q`, `k` or `v` when float32 (or float16 inputs) cannot hold them (contract §4.5,
// registry/float32_guard.h), before anything is uploaded.
DeviceProblem upload_problem(const Problem& problem, DType dtype, const char* kernel_name);

// o32 [B,H,Lq,Dv] and lse32 [B,H,Lq] from the device; a packed problem's o32 [total_q, H,
// Dv] and lse32 [H, total_q].
void download_outputs(const DeviceProblem& problem, Output& out);

// The registry's run_<name> for every CUDA kernel: upload, poison, launch, synchronize,
// download. Throws RuntimeError("no CUDA device: ...") when there is none.
void run_on_device(const Problem& problem, Output& out, DType dtype, LaunchFn launch,
                   const char* name);

// Benchmarks: q, k, v of the pattern's sizes filled on the device with uniform [-1, 1)
// values (a pure function of seed and index), scale 1/sqrt(head_dim), the pattern
// uploaded. Throws RuntimeError without a device, InvalidArgument for bad sizes.
DeviceProblem random_device_problem(const Pattern& pattern, int64_t batch, int64_t head_dim,
                                    int64_t head_dim_v, DType dtype, uint64_t seed);

// x rounded to `dtype` exactly as upload_problem rounds it (double -> float32 -> dtype),
// widened back to double: the inputs of the oracle that half-precision kernels are
// compared with (core/numerics.h, kTolFloat16 / kTolBfloat16). Host only; no device needed.
Tensor<double> round_like_device(const Tensor<double>& x, DType dtype);

}  // namespace cuda
}  // namespace sparseattn
