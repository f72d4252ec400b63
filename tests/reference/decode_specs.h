// The pattern specs the decode and layout tests build (contract §3: dense, window with
// left/right reach and dilation, chunked; each causal or not), written once for
// tests/reference/decode_row_test.cpp, tests/cpu/decode_kernel_test.cpp and
// tests/cuda/cuda_layout_kernels_test.cpp.
#pragma once

#include <cstdint>

#include "pattern/pattern.h"

namespace sparseattn::testing_spec {

inline PatternSpec dense(bool causal) {
  PatternSpec s;
  s.causal = causal;
  return s;
}

// FlashAttention's window_size = (left, right) with every `dilation`-th key (contract §3.3).
inline PatternSpec window(int64_t left, int64_t right, int64_t dilation, bool causal) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window_left = left;
  s.window_right = right;
  s.dilation = dilation;
  s.causal = causal;
  return s;
}

// Chunks of `c` positions, attention within a chunk only (contract §3.14).
inline PatternSpec chunked(int64_t c, bool causal) {
  PatternSpec s;
  s.kind = PatternKind::chunked;
  s.chunk_size = c;
  s.causal = causal;
  return s;
}

}  // namespace sparseattn::testing_spec
