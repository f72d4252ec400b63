// `info`'s result and its renderer; see info_result.h.
#include "api/info_result.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace sparseattn::api {

namespace {

// One printf-formatted line.
std::string line(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return std::string(buf) + "\n";
}

const char* draws_layout(PatternKind kind) {
  switch (kind) {
    case PatternKind::bigbird:
      return "[num_heads, nb - 2, num_random_blocks] key-block indices of query blocks 1..nb-2 "
             "(HF rand_attn); mask --random-table-out writes them";
    case PatternKind::bigbird_etc:
      return "[num_heads, nb, num_random_blocks] key-block indices; mask --random-table-out writes them";
    case PatternKind::random:
      return "[num_heads, seq_len_q, num_random] key indices, -1 where a row has fewer; mask "
             "--random-table-out writes them, --random-table reads them back";
    default: return "none";
  }
}

}  // namespace

TileCost tile_cost(const Pattern& p, int64_t head_dim) {
  int64_t tile_pairs = 0, kv_columns = 0, layout_bytes = 0;
  std::vector<const HeadLayout*> seen;
  for (int64_t h = 0; h < p.sizes.num_heads; ++h) {
    const HeadLayout& L = p.head(h);
    for (int64_t qt = 0; qt < L.num_q_tiles(); ++qt) {
      const int64_t rows = std::min(L.tile, L.seq_len_q - qt * L.tile);
      for (int64_t e = L.row_ptr[qt]; e < L.row_ptr[qt + 1]; ++e) {
        const int64_t cols = std::min(L.tile, L.seq_len_k - int64_t{L.col[e]} * L.tile);
        tile_pairs += rows * cols;
        kv_columns += cols;
      }
    }
    if (std::find(seen.begin(), seen.end(), &L) != seen.end()) continue;
    seen.push_back(&L);
    layout_bytes += static_cast<int64_t>(L.row_ptr.size() * sizeof(int64_t) + L.col.size() * sizeof(int32_t) +
                                         L.bits_at.size() * sizeof(int64_t) + L.bits.size() * sizeof(uint64_t));
  }
  PatternStats st = pattern_stats(p);
  const double flops = attention_flops(st, head_dim, head_dim);
  st.nnz = tile_pairs;
  TileCost t;
  t.tile_pairs = tile_pairs;
  t.tiled_flops = attention_flops(st, head_dim, head_dim);
  t.partial_tile_waste = t.tiled_flops > 0 ? 1.0 - flops / t.tiled_flops : 0.0;
  const double H = static_cast<double>(p.sizes.num_heads), D = static_cast<double>(head_dim);
  const double q_o_lse = 4.0 * H * static_cast<double>(p.sizes.seq_len_q) * (2 * D + 1);
  t.bytes_min = q_o_lse + 4.0 * H * static_cast<double>(p.sizes.seq_len_k) * 2 * D;
  t.bytes_tiled = q_o_lse + 4.0 * static_cast<double>(kv_columns) * 2 * D;
  t.layout_bytes = layout_bytes;
  return t;
}

nlohmann::json tile_cost_json(const TileCost& t) {
  return {{"tile_pairs", t.tile_pairs},   {"tiled_flops", t.tiled_flops},
          {"partial_tile_waste", t.partial_tile_waste}, {"bytes_min", t.bytes_min},
          {"bytes_tiled", t.bytes_tiled}, {"layout_bytes", t.layout_bytes}};
}

InfoResult info_result(const Pattern& pattern, int64_t head_dim) {
  InfoResult r;
  r.pattern = describe(pattern.spec);
  r.sizes = pattern.sizes;
  r.head_dim = head_dim;
  r.stats = pattern_stats(pattern);
  r.flops = attention_flops(r.stats, head_dim, head_dim);
  PatternStats dense = r.stats;
  dense.nnz = r.stats.dense_pairs;
  r.dense_flops = attention_flops(dense, head_dim, head_dim);
  r.random_draws = pattern.random_draws.numel();
  r.random_draws_shape = pattern.random_draws.shape;
  r.random_draws_layout = draws_layout(pattern.spec.kind);
  r.random_shortfall = pattern.random_shortfall;
  r.clamped = pattern.clamped;
  r.key_padding = pattern.has_key_padding();
  r.tiles = tile_cost(pattern, head_dim);
  return r;
}

nlohmann::json info_json(const InfoResult& r) {
  const PatternStats& st = r.stats;
  nlohmann::json j = {
      {"pattern", r.pattern},
      {"num_heads", r.sizes.num_heads},
      {"seq_len_q", r.sizes.seq_len_q},
      {"seq_len_k", r.sizes.seq_len_k},
      {"head_dim", r.head_dim},
      {"nnz", st.nnz},
      {"dense_pairs", st.dense_pairs},
      {"density", st.density},
      {"keys_per_row", {{"min", st.row_min}, {"mean", st.row_mean}, {"max", st.row_max}}},
      {"empty_rows", st.empty_rows},
      {"tiles", {{"listed", st.num_tiles}, {"full", st.full_tiles},
                 {"partial", st.num_tiles - st.full_tiles}}},
      {"random_draws", r.random_draws},
      {"random_draws_shape", r.random_draws_shape},
      {"random_draws_layout", r.random_draws_layout},
      {"random_shortfall", r.random_shortfall},
      {"flops", r.flops},
      {"dense_flops", r.dense_flops},
      {"flops_fraction", r.dense_flops > 0 ? r.flops / r.dense_flops : 0.0},
      {"clamped", r.clamped},
  };
  j.update(tile_cost_json(r.tiles));
  return j;
}

std::string info_text(const InfoResult& r) {
  const PatternStats& st = r.stats;
  const TileCost& t = r.tiles;
  auto i64 = [](int64_t x) { return static_cast<long long>(x); };
  std::string s =
      line("pattern       %s", r.pattern.c_str()) +
      line("sizes         num_heads %lld, seq_len_q %lld, seq_len_k %lld, head_dim %lld",
           i64(r.sizes.num_heads), i64(r.sizes.seq_len_q), i64(r.sizes.seq_len_k), i64(r.head_dim)) +
      line("nnz           %lld allowed (head, query, key) triples of %lld", i64(st.nnz),
           i64(st.dense_pairs)) +
      line("density       %.6f", st.density) +
      line("keys per row  min %lld, mean %.2f, max %lld", i64(st.row_min), st.row_mean, i64(st.row_max)) +
      line("empty rows    %lld (o = 0, lse = -inf)", i64(st.empty_rows)) +
      line("tiles         %lld listed: %lld full, %lld partial", i64(st.num_tiles), i64(st.full_tiles),
           i64(st.num_tiles - st.full_tiles)) +
      line("random draws  %lld made, %lld short (fewer candidates than asked)",
           i64(r.random_draws - r.random_shortfall), i64(r.random_shortfall)) +
      line("FLOPs         %.4g per batch element vs dense %.4g (%.4f of dense)", r.flops, r.dense_flops,
           r.dense_flops > 0 ? r.flops / r.dense_flops : 0.0);
  // contract §3: parameters beyond the sequence mean their clamped value; say which.
  for (const std::string& c : r.clamped)
    s += line("clamped       %s (beyond the sequence: the same pattern)", c.c_str());
  if (r.key_padding) s += "note          counts ignore --key-padding-mask (it varies per batch element)\n";
  s += line("tiled FLOPs   %.4g: every pair of every listed tile (%.1f%% spent on masked pairs of "
            "partial tiles)",
            t.tiled_flops, 100 * t.partial_tile_waste) +
       line("bytes         %.4g moved by a tiled float32 kernel (k, v once per listed tile); %.4g "
            "with every tensor once",
            t.bytes_tiled, t.bytes_min) +
       line("layout        %lld bytes (row_ptr, col, tile masks; shared heads once)", i64(t.layout_bytes));
  return s;
}

}  // namespace sparseattn::api
