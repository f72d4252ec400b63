#include "graph/layer_graph.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sparseattn::graph {

LayerStack uniform_stack(std::shared_ptr<const Pattern> pattern, int64_t num_layers) {
  require(num_layers >= 1, "layers", num_layers, "must be >= 1");
  LayerStack stack;
  stack.layers.assign(static_cast<size_t>(num_layers), std::move(pattern));
  return stack;
}

void validate_stack(const LayerStack& stack) {
  require(stack.num_layers() >= 1, "layers", stack.num_layers(), "must be >= 1");
  const int64_t n = stack.layers[0]->sizes.seq_len_q;
  for (int64_t l = 0; l < stack.num_layers(); ++l) {
    const Pattern& p = *stack.layers[l];
    const std::string name = "layers[" + std::to_string(l) + "]";
    require(p.sizes.seq_len_q == p.sizes.seq_len_k, name + ".seq_len_k", p.sizes.seq_len_k,
            "must equal seq_len_q = " + std::to_string(p.sizes.seq_len_q) +
                " (the graph view is for self-attention)");
    require(p.sizes.seq_len_q == n, name + ".seq_len", p.sizes.seq_len_q,
            "must equal layer 0's seq_len = " + std::to_string(n));
    require(!p.has_key_padding(), "key_padding_mask", "given",
            "none (padding belongs to one batch element, the graph view to the pattern)");
  }
  require(n >= 1 && n < (int64_t{1} << 31), "seq_len", n, "must be in [1, 2^31)");
}

HeadLayout layer_union(const Pattern& pattern) {
  const HeadLayout& first = pattern.head(0);
  const int64_t n = first.seq_len_q, tile = first.tile;
  // Heads with identical patterns share one layout (pattern.h); visit each once.
  std::vector<const HeadLayout*> distinct;
  for (const auto& h : pattern.heads)
    if (std::find(distinct.begin(), distinct.end(), h.get()) == distinct.end())
      distinct.push_back(h.get());
  for (const HeadLayout* h : distinct)
    require(h->tile == tile && h->seq_len_q == n && h->seq_len_k == n, "pattern heads", "mixed",
            "every head of one layer must have the same tile and sizes");

  LayoutBuilder builder(n, n, tile);
  for (int64_t qt = 0; qt < first.num_q_tiles(); ++qt) {
    builder.begin_query_tile(qt);
    const int64_t rows = std::min(tile, n - qt * tile);
    for (const HeadLayout* h : distinct) {
      for (int64_t e = h->row_ptr[qt]; e < h->row_ptr[qt + 1]; ++e) {
        const int64_t kt = h->col[e], k0 = kt * tile;
        if (h->is_full(e)) {
          builder.add_full_tile(kt);
          continue;
        }
        const int64_t cols = std::min(tile, n - k0);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            if (h->tile_allows(e, r, c)) builder.add_key(qt * tile + r, k0 + c);
      }
    }
    // The residual path: every token keeps its own information (the self edge).
    for (int64_t r = 0; r < rows; ++r) builder.add_key(qt * tile + r, qt * tile + r);
  }
  return builder.finish();
}

bool block_level_exact(const std::vector<HeadLayout>& unions) {
  if (unions.empty() || unions[0].tile < 2) return false;
  for (const HeadLayout& u : unions) {
    if (u.tile != unions[0].tile) return false;
    for (int64_t e = 0; e < u.num_tiles(); ++e)
      if (!u.is_full(e)) return false;
  }
  return true;
}

HeadLayout block_graph(const HeadLayout& union_layout, int64_t node_tile) {
  const int64_t nb = union_layout.num_q_tiles();
  LayoutBuilder builder(nb, nb, node_tile);
  for (int64_t a = 0; a < nb; ++a) {
    if (a % node_tile == 0) builder.begin_query_tile(a / node_tile);
    for (int64_t e = union_layout.row_ptr[a]; e < union_layout.row_ptr[a + 1]; ++e)
      builder.add_key(a, union_layout.col[e]);
  }
  return builder.finish();
}

}  // namespace sparseattn::graph
