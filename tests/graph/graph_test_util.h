// Serves the tests of contract §6 (graph view).
// Pattern builders shared by the graph tests: the field's names, one line per pattern.
#pragma once

#include <memory>
#include <vector>

#include "graph/layer_graph.h"
#include "pattern/pattern.h"

namespace sparseattn::graph::testing {

inline PatternSpec window_spec(int64_t w, int64_t d = 1, bool causal = false, int64_t tile = 64) {
  PatternSpec s;
  s.kind = PatternKind::window;
  s.window = w;
  s.dilation = d;
  s.causal = causal;
  s.tile = tile;
  return s;
}

inline PatternSpec longformer_spec(int64_t w, std::vector<int64_t> global, int64_t tile = 64) {
  PatternSpec s = window_spec(w, 1, false, tile);
  s.kind = PatternKind::longformer;
  s.global = std::move(global);
  return s;
}

inline PatternSpec random_spec(int64_t w, int64_t r, uint64_t seed, int64_t tile = 64) {
  PatternSpec s = window_spec(w, 1, false, tile);
  s.kind = PatternKind::random;
  s.num_random = r;
  s.seed = seed;
  return s;
}

inline PatternSpec bigbird_spec(int64_t b, int64_t r, uint64_t seed) {
  PatternSpec s;
  s.kind = PatternKind::bigbird;
  s.block_size = b;
  s.num_random_blocks = r;
  s.seed = seed;
  return s;
}

inline PatternSpec per_head_spec(std::vector<PatternSpec> heads) {
  PatternSpec s;
  s.kind = PatternKind::per_head;
  s.per_head = std::move(heads);
  return s;
}

inline std::shared_ptr<const Pattern> make(const PatternSpec& spec, int64_t n,
                                           int64_t num_heads = 1) {
  PatternSizes z;
  z.num_heads = spec.kind == PatternKind::per_head ? static_cast<int64_t>(spec.per_head.size())
                                                   : num_heads;
  z.seq_len_q = z.seq_len_k = n;
  return std::make_shared<const Pattern>(materialize(spec, z));
}

inline LayerStack stack_of(const PatternSpec& spec, int64_t n, int64_t layers = 1,
                           int64_t num_heads = 1) {
  return uniform_stack(make(spec, n, num_heads), layers);
}

}  // namespace sparseattn::graph::testing
