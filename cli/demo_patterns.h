// The patterns `sparseattn demo` runs, in one place so that the demo and its
// test (tests/cli/cli_demo_test.cpp) agree on what must appear. They are the entries of
// the one family list (api/families.h) that carry a demo label, in its order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pattern/spec.h"

namespace sparseattn::cli {

struct DemoPattern {
  std::string label;  // short name for the table: "dense", "longformer", ...
  PatternSpec spec;
};

// For seq_len n and seed: dense; Longformer-base-like (window 256 one-sided, the first 4
// tokens global); BigBird-base-like ITC (block 64, 3 random blocks); a dilated window
// (128, dilation 2); token-level random keys (window 32 + 64 random keys per query).
// Those are the values from n = 4096 up; below, each size parameter scales with n
// (window n/16, block n/64, dilated window n/32, random window n/128 and n/64 random
// keys, each at least 1), so a small run still shows a sparse pattern, not density 1.
std::vector<DemoPattern> demo_patterns(int64_t n, uint64_t seed);

}  // namespace sparseattn::cli
