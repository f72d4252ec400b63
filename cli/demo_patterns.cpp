#include "cli/demo_patterns.h"

#include <algorithm>

#include "api/families.h"

namespace sparseattn::cli {

namespace {
// The model's parameter at its own length n = 4096, scaled to n: `at_4096 * n / 4096`,
// at least `lo` and at most `at_4096`, so a short run keeps the pattern's density.
int64_t scaled(int64_t at_4096, int64_t n, int64_t lo) {
  return std::max<int64_t>(lo, std::min<int64_t>(at_4096, at_4096 * n / 4096));
}

// The size parameters a kind uses (its window, block or random-key count), scaled to n.
PatternSpec scaled_to(PatternSpec s, int64_t n) {
  const bool windowed = s.kind == PatternKind::window || s.kind == PatternKind::longformer ||
                        s.kind == PatternKind::random;
  if (windowed) s.window = scaled(s.window, n, 1);
  if (s.kind == PatternKind::random) s.num_random = scaled(s.num_random, n, 1);
  if (s.kind == PatternKind::bigbird) s.block_size = scaled(s.block_size, n, 1);
  return s;
}
}  // namespace

std::vector<DemoPattern> demo_patterns(int64_t n, uint64_t seed) {
  std::vector<DemoPattern> out;
  for (const api::Family& f : api::families())
    if (!f.demo_label.empty()) out.push_back({f.demo_label, scaled_to(f.spec(n, seed), n)});
  return out;
}

}  // namespace sparseattn::cli
