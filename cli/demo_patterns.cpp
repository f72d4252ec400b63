#include "cli/demo_patterns.h"

#include <algorithm>

namespace sparseattn::cli {

namespace {
// The model's parameter at its own length n = 4096, scaled to n: `at_4096 * n / 4096`,
// at least `lo` and at most `at_4096`, so a short run keeps the pattern's density.
int64_t scaled(int64_t at_4096, int64_t n, int64_t lo) {
  return std::max<int64_t>(lo, std::min<int64_t>(at_4096, at_4096 * n / 4096));
}
}  // namespace

std::vector<DemoPattern> demo_patterns(int64_t n, uint64_t seed) {
  std::vector<DemoPattern> out;
  out.push_back({"dense", PatternSpec{}});

  // Longformer-base: one-sided window 256 (HF attention_window = 512); global attention on
  // the first 4 tokens, as for a [CLS] token and a short question (Beltagy et al. 2020, §3).
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = scaled(256, n, 1);
  for (int64_t g = 0; g < std::min<int64_t>(4, n); ++g) lf.global.push_back(g);
  out.push_back({"longformer", lf});

  // BigBird-base ITC: block 64, 3 random blocks (Zaheer et al. 2020, App. E.1).
  PatternSpec bb;
  bb.kind = PatternKind::bigbird;
  bb.block_size = scaled(64, n, 1);
  bb.num_random_blocks = 3;
  bb.seed = seed;
  out.push_back({"bigbird", bb});

  // A dilated window as in Longformer's upper layers: the 257 keys per row of w = 128,
  // spread over +-256 tokens.
  PatternSpec wd;
  wd.kind = PatternKind::window;
  wd.window = scaled(128, n, 1);
  wd.dilation = 2;
  out.push_back({"window-dilated", wd});

  // Token-level random keys on top of a small window (BigBird's R + W at token level).
  PatternSpec rnd;
  rnd.kind = PatternKind::random;
  rnd.window = scaled(32, n, 1);
  rnd.num_random = scaled(64, n, 1);
  rnd.seed = seed;
  out.push_back({"random", rnd});
  return out;
}

}  // namespace sparseattn::cli
