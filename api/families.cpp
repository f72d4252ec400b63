// The one list of pattern families (families.h).
#include "api/families.h"

#include <algorithm>

namespace sparseattn::api {
namespace {

PatternSpec window(int64_t w, int64_t dilation) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = w;
  s.dilation = dilation;
  return s;
}

PatternSpec longformer(int64_t w, std::vector<int64_t> global) {
  PatternSpec s;
  s.kind = PatternKind::longformer;
  s.window = w;
  s.global = std::move(global);
  return s;
}

PatternSpec bigbird(int64_t block_size, int64_t num_random_blocks, uint64_t seed) {
  PatternSpec s;
  s.kind = PatternKind::bigbird;
  s.block_size = block_size;
  s.num_random_blocks = num_random_blocks;
  s.seed = seed;
  return s;
}

// Token-level random keys on top of a window: the random kind is a Longformer pattern
// plus `num_random` drawn keys per query (pattern/spec.h).
PatternSpec random_keys(int64_t w, int64_t num_random, uint64_t seed) {
  PatternSpec s = longformer(w, {});
  s.kind = PatternKind::random;
  s.num_random = num_random;
  s.seed = seed;
  return s;
}

}  // namespace

const std::vector<Family>& families() {
  const std::vector<CudaCase> window_kernels = {{"cuda_c05_window_bf16", 65536, 128},
                                                {"cuda_c08_generic_bf16", 65536, 128},
                                                {"cuda_c05_window_f32", 32768, 128}};
  static const std::vector<Family> list = {
      {"dense", "dense", true, true,
       {{"cuda_c04_flash_dense_bf16", 65536, 128}, {"cuda_c04_flash_dense_f16", 16384, 128},
        {"cuda_c03_flash_dense", 16384, 128}, {"cuda_c02_tiled_dense", 4096, 64},
        {"cuda_c01_naive_dense", 4096, 64}},
       [](int64_t, uint64_t) { return PatternSpec{}; }},
      {"window_w256", "", true, false, window_kernels,
       [](int64_t, uint64_t) { return window(256, 1); }},
      {"window_w1024", "", false, false, window_kernels,
       [](int64_t, uint64_t) { return window(1024, 1); }},
      {"longformer_w256_g2", "", true, false, {},
       [](int64_t n, uint64_t) { return longformer(256, {0, n / 2}); }},
      {"longformer_w256_g4", "longformer", false, false, {},
       [](int64_t n, uint64_t) {
         std::vector<int64_t> global;
         for (int64_t g = 0; g < std::min<int64_t>(4, n); ++g) global.push_back(g);
         return longformer(256, global);
       }},
      {"bigbird_b64_r3", "bigbird", true, false,
       {{"cuda_c07_bigbird_bf16", 65536, 128}, {"cuda_c08_generic_bf16", 65536, 128},
        {"cuda_c07_bigbird_f32", 32768, 128}},
       [](int64_t, uint64_t seed) { return bigbird(64, 3, seed); }},
      {"window_w128_d2", "window-dilated", true, false, {},
       [](int64_t, uint64_t) { return window(128, 2); }},
      {"random_w32_r64", "random", false, false, {},
       [](int64_t, uint64_t seed) { return random_keys(32, 64, seed); }},
  };
  return list;
}

}  // namespace sparseattn::api
