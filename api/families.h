// The pattern families the timing programs iterate, in one list: bench_cpu and
// bench_backward (forward and backward figures of the same patterns), bench_cuda (with
// the kernels it times on each and how far), and `sparseattn demo` (which scales each to
// its --seq-len, cli/demo_patterns.h). A program takes the entries it runs, in list order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pattern/spec.h"

namespace sparseattn::api {

// A kernel bench_cuda times on a family, up to these sizes: the float32 and naive kernels
// stop early, as their time would eat the GPU check's budget without telling anything new.
struct CudaCase {
  const char* kernel;   // a registry name (registry/cuda_kernels.def)
  int64_t max_seq_len;  // largest seq_len timed
  int64_t max_head_dim;
};

struct Family {
  std::string name;        // benchmark and plot name: "window_w128_d2"
  std::string demo_label;  // its label in `sparseattn demo`'s table; "" = not in the demo
  bool cpu = false;        // timed by bench_cpu and bench_backward
  bool dense_sizes = false;  // bench_cpu: dense grid (to 16384), not the sparse one (65536)
  std::vector<CudaCase> cuda;  // bench_cuda's kernels on it; empty = not in bench_cuda
  // The pattern at seq_len (the model's published sizes; the demo scales them below 4096).
  // `seed` seeds the kinds that draw (bigbird, random); the benchmarks pass 0.
  std::function<PatternSpec(int64_t seq_len, uint64_t seed)> spec;
};

// dense; sliding windows w = 256, 1024; Longformer w = 256 with global tokens {0, n/2}
// (a [CLS]-like first token and one in the middle) and with the first 4 tokens global (a
// [CLS] token and a short question, Beltagy et al. 2020, §3); BigBird-base ITC (block 64,
// 3 random blocks, Zaheer et al. 2020, App. E.1); a dilated window (128, dilation 2:
// Longformer's upper layers, 257 keys over ±256 tokens); token-level random keys (window
// 32 + 64 random keys per query: BigBird's R + W at token level).
const std::vector<Family>& families();

}  // namespace sparseattn::api
