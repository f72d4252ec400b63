// cuda_block_mask — exports a pattern's tile table as a block mask, so PyTorch's
// FlexAttention (tools/torch_baseline.py) runs exactly OUR pattern, random blocks
// included, instead of a re-derivation of it.
//
//   build/cuda_block_mask --seq-len 65536 --num-heads 16 --pattern bigbird
//       --block-size 64 --num-random-blocks 3 --seed 0 --out bigbird.npy   (one line)
//
// Output: uint8 [num_heads, num_q_tiles, num_k_tiles], 1 where the layout lists the
// tile; a second file <out>.full.npy marks the listed tiles that are full (every pair
// allowed) — FlexAttention's full_kv blocks, which skip its mask_mod. Tile side: the
// layout's (block_size for BigBird, --tile for token patterns). Partial tiles need a
// mask_mod that reproduces their bits; the script checks its predicate against
// --element first.
//
// --element: instead, the element mask uint8 [num_heads, seq_len, seq_len], 1 where query
// i may attend key j (HeadLayout::allowed) — the ground truth a FlexAttention mask_mod is
// checked against (small seq_len only: n² bytes per head).
#include <CLI/CLI.hpp>
#include <iostream>

#include "api/pattern_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "pattern/pattern.h"

int main(int argc, char** argv) {
  using namespace sparseattn;
  CLI::App app{"cuda_block_mask: a pattern's tile table as [heads, q_tiles, k_tiles] uint8"};
  api::PatternFlags flags;
  int64_t seq_len = 0, num_heads = 1, tile = 64;
  std::string out;
  bool element = false;
  app.add_option("--seq-len", seq_len, "tokens (>= 1)")->required();
  app.add_option("--num-heads", num_heads, "heads (>= 1)");
  app.add_option("--tile", tile, "tile side for token-level patterns (>= 1)");
  app.add_option("--out", out, "output .npy path")->required();
  app.add_flag("--element", element, "write the element mask [heads, seq_len, seq_len] instead (seq_len <= 8192)");
  api::add_pattern_flags(&app, flags);
  try {
    app.parse(argc, argv);
    PatternSpec spec = api::to_spec(flags);
    spec.tile = tile;
    if (element)
      require(seq_len >= 1 && seq_len <= 8192, "--seq-len", seq_len, "--element writes seq_len^2 bytes per head: 1 .. 8192");
    const Pattern p = materialize(spec, PatternSizes{1, num_heads, seq_len, seq_len});
    if (element) {
      Tensor<uint8_t> mask({num_heads, seq_len, seq_len}, 0);
      for (int64_t h = 0; h < num_heads; ++h)
        for (int64_t i = 0; i < seq_len; ++i)
          for (int64_t j = 0; j < seq_len; ++j)
            mask.data[(h * seq_len + i) * seq_len + j] = p.head(h).allowed(i, j) ? 1 : 0;
      write_npy(out, mask, false);
      std::cout << describe(spec) << " element mask, nnz=" << pattern_stats(p).nnz << "\n";
      return 0;
    }
    const HeadLayout& first = p.head(0);
    const int64_t qt = first.num_q_tiles(), kt = first.num_k_tiles();
    Tensor<uint8_t> listed({num_heads, qt, kt}, 0), full({num_heads, qt, kt}, 0);
    for (int64_t h = 0; h < num_heads; ++h) {
      const HeadLayout& l = p.head(h);
      require(l.tile == first.tile, "pattern", describe(spec), "every head must use one tile size");
      for (int64_t r = 0; r < qt; ++r)
        for (int64_t e = l.row_ptr[r]; e < l.row_ptr[r + 1]; ++e) {
          listed.data[(h * qt + r) * kt + l.col[e]] = 1;
          full.data[(h * qt + r) * kt + l.col[e]] = l.is_full(e) ? 1 : 0;
        }
    }
    write_npy(out, listed, false);
    write_npy(out + ".full.npy", full, false);
    std::cout << describe(spec) << " tile=" << first.tile << " nnz=" << pattern_stats(p).nnz << "\n";
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "cuda_block_mask: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
