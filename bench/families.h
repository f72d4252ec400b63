// The pattern families the CPU benchmarks time (bench_cpu forward, bench_backward), one
// list for both so the forward and backward figures are of the same patterns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pattern/spec.h"

namespace sparseattn::bench {

// A benchmarked pattern, named as in the plots, built for a given seq_len.
struct PatternFamily {
  std::string label;
  bool dense;  // dense sizes (up to 16384) instead of sparse ones (up to 65536)
  std::function<PatternSpec(int64_t seq_len)> spec;
};

inline std::vector<PatternFamily> families() {
  auto window = [](int64_t w, int64_t d) {
    return [w, d](int64_t) {
      PatternSpec s;
      s.kind = PatternKind::window;
      s.window = w;
      s.dilation = d;
      return s;
    };
  };
  return {
      {"dense", true, [](int64_t) { return PatternSpec{}; }},
      {"window_w256", false, window(256, 1)},
      {"window_w128_d2", false, window(128, 2)},
      {"longformer_w256_g2", false,
       [](int64_t n) {
         PatternSpec s;
         s.kind = PatternKind::longformer;
         s.window = 256;
         s.global = {0, n / 2};  // a [CLS]-like first token and one in the middle
         return s;
       }},
      {"bigbird_b64_r3", false,
       [](int64_t) {
         PatternSpec s;
         s.kind = PatternKind::bigbird;
         s.block_size = 64;
         s.num_random_blocks = 3;
         s.seed = 0;
         return s;
       }},
  };
}

}  // namespace sparseattn::bench
