#include "cli/demo_patterns.h"

#include <algorithm>

namespace sparseattn::cli {

namespace {

// n / divisor, at least 1 and at most the published value `cap` (reached at n = 4096 for
// every parameter below): a small run stays sparse instead of every window covering the
// whole sequence (density 1 teaches nothing).
int64_t scaled(int64_t n, int64_t divisor, int64_t cap) {
  return std::clamp<int64_t>(n / divisor, 1, cap);
}

}  // namespace

std::vector<DemoPattern> demo_patterns(int64_t n, uint64_t seed) {
  std::vector<DemoPattern> out;
  out.push_back({"dense", PatternSpec{}});

  // Longformer-base: one-sided window 256 (HF attention_window = 512); global attention on
  // the first 4 tokens, as for a [CLS] token and a short question (Beltagy et al. 2020, §3).
  PatternSpec lf;
  lf.kind = PatternKind::longformer;
  lf.window = scaled(n, 16, 256);
  for (int64_t g = 0; g < std::min<int64_t>(4, n); ++g) lf.global.push_back(g);
  out.push_back({"longformer", lf});

  // BigBird-base ITC: block 64, 3 random blocks (Zaheer et al. 2020, App. E.1).
  PatternSpec bb;
  bb.kind = PatternKind::bigbird;
  bb.block_size = scaled(n, 64, 64);
  bb.num_random_blocks = 3;
  bb.seed = seed;
  out.push_back({"bigbird", bb});

  // A dilated window as in Longformer's upper layers: the 257 keys per row of w = 128,
  // spread over +-256 tokens.
  PatternSpec wd;
  wd.kind = PatternKind::window;
  wd.window = scaled(n, 32, 128);
  wd.dilation = 2;
  out.push_back({"window-dilated", wd});

  // Token-level random keys on top of a small window (BigBird's R + W at token level).
  PatternSpec rnd;
  rnd.kind = PatternKind::random;
  rnd.window = scaled(n, 128, 32);
  rnd.num_random = scaled(n, 64, 64);
  rnd.seed = seed;
  out.push_back({"random", rnd});
  return out;
}

}  // namespace sparseattn::cli
