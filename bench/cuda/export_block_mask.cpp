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
// `sparseattn mask` before using it.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/pattern_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/pattern/pattern.h"

int main(int argc, char** argv) {
  using namespace sparseattn;
  CLI::App app{"cuda_block_mask: a pattern's tile table as [heads, q_tiles, k_tiles] uint8"};
  cli::PatternFlags flags;
  int64_t seq_len = 0, num_heads = 1, tile = 64;
  std::string out;
  app.add_option("--seq-len", seq_len, "tokens (>= 1)")->required();
  app.add_option("--num-heads", num_heads, "heads (>= 1)");
  app.add_option("--tile", tile, "tile side for token-level patterns (>= 1)");
  app.add_option("--out", out, "output .npy path")->required();
  cli::add_pattern_flags(&app, flags);
  try {
    app.parse(argc, argv);
    PatternSpec spec = cli::to_spec(flags);
    spec.tile = tile;
    const Pattern p = materialize(spec, PatternSizes{1, num_heads, seq_len, seq_len});
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
