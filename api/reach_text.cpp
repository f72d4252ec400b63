// `reach`'s text; see reach_text.h.
#include "api/reach_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace sparseattn::api {

namespace {

std::string text_or(const std::optional<int64_t>& v, const char* none) {
  return v ? std::to_string(*v) : none;
}

}  // namespace

std::string reach_text(const ReachResult& r, const ReachRequest& request,
                       const graph::LayerStack& stack, double seconds) {
  const graph::ReachSummary& s = r.summary;
  const int64_t n = stack.seq_len(), token = request.token;
  std::string out = fmt::format("reach         seq_len {}, {} layer(s), level {}{}\n", n,
                                stack.num_layers(), graph::level_name(s.level),
                                s.level == graph::Level::block
                                    ? " (every tile full: exact on the block graph)"
                                    : " (exact)");
  for (int64_t first = 0, l = 1; l <= stack.num_layers(); ++l) {
    if (l < stack.num_layers() && stack.same_as_previous(l)) continue;  // a run of equal layers
    out += fmt::format("layers {:<6} {}, {} head(s)\n", fmt::format("{}-{}", first + 1, l),
                       describe(stack.layer(first).spec), stack.layer(first).sizes.num_heads);
    first = l;
  }
  out += fmt::format("\n{:>6}  {:>18}", "layer", "connected fraction");
  if (token >= 0)
    out += fmt::format("  {:>10}  {:>8}  {:>16}", fmt::format("cover({})", token), "span",
                       "rollout evenness");
  out += "\n";
  const int64_t rows = static_cast<int64_t>(r.connected_fraction.size());
  for (int64_t L = 1; L <= rows; ++L) {
    // Long saturation tails (a window ring takes n/w layers): the stack, then every
    // power of two, then the last.
    const bool shown = L <= std::max<int64_t>(stack.num_layers(), 16) || (L & (L - 1)) == 0 || L == rows;
    if (!shown) continue;
    out += fmt::format("{:>6}  {:>18.6f}", L, r.connected_fraction[L - 1]);
    if (token >= 0 && L <= stack.num_layers())
      out += fmt::format("  {:>10}  {:>8}  {:>16}", s.coverage[L - 1], s.span[L - 1],
                         r.rollout_ok ? fmt::format("{:.4f}", r.evenness[L - 1]) : "n/a");
    out += L > stack.num_layers() ? "   (last layer repeated)\n" : "\n";
  }
  const auto& gap = r.gap;
  out += fmt::format("\nmixing depth        {}\n", text_or(r.mixing_depth, "never (some pairs never connect)")) +
         fmt::format("diameter            {}\n", text_or(r.diameter, "none (disconnected)")) +
         fmt::format("mean shortest path  {}\n",
                     r.mean_shortest_path
                         ? fmt::format("{:.4f} hops (connected pairs, i != j)", *r.mean_shortest_path)
                         : "none") +
         fmt::format("never connected     {} of {} ordered pairs\n", s.never, n * n) +
         "spectral gap        " +
         (gap ? fmt::format("{:.4g} (layer 1; 1 - |lambda2| = 1 - {:.4g}; {}{})\n", gap->gap,
                            gap->lambda2_modulus, gap->method, gap->block_level ? ", block graph" : "")
              : "unknown (" + r.gap_note + ")\n");
  out += "hop distances       ";
  for (size_t d = 0; d < s.hops.size(); ++d) {
    if (s.hops.size() > 24 && d >= 12 && d + 12 < s.hops.size()) {
      if (d == 12) out += "... ";
      continue;
    }
    out += fmt::format("{}:{} ", d, s.hops[d]);
  }
  out += "\n";
  if (request.path) {
    out += fmt::format("path {} -> {}      ", request.path->first, request.path->second);
    if (r.path.empty()) out += "none (never connected)";
    for (size_t k = 0; k < r.path.size(); ++k) out += (k ? " -> " : "") + std::to_string(r.path[k]);
    if (!r.path.empty()) out += fmt::format("   ({} hop(s))", r.path.size() - 1);
    out += "\n";
  }
  out += fmt::format("time                {:.2f} s\n", seconds);
  return out;
}

}  // namespace sparseattn::api
