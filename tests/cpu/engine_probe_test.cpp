// Checks contract §4.11 (the probes time loops, not kernels): the engine probe
// (optimized/cpu/engine_probe.h) in every build this CPU runs: the FLOPs
// it reports are the counts of its shapes, each part took time, and bad arguments are
// refused by name. Its figures are benchmarks (bench_cpu's engine_parts), not tested here.
// And the cache-line storage of the panels and tiles (optimized/cpu/aligned.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/aligned.h"
#include "optimized/cpu/engine_probe.h"
#include "optimized/cpu/isa.h"

namespace sparseattn::cpu {
namespace {

TEST(EngineProbe, ReportsTheFlopsOfItsShapesInEveryBuild) {
  for (Isa isa : supported_isas()) {
    ScopedIsa scoped(isa);
    for (int64_t d : {1, 17, 64, 128}) {
      const EngineProbe e = engine_probe(d, 3, 1);
      // kBr = kBc = 64 in both builds (flash_tile.h): 2·64·64·d per chunk and product.
      const double per_chunk = 2.0 * 64 * 64 * static_cast<double>(d);
      EXPECT_EQ(e.head_dim, d);
      EXPECT_DOUBLE_EQ(e.qk_flops, 3 * per_chunk) << isa_name(isa) << " d " << d;
      EXPECT_DOUBLE_EQ(e.pv_flops, 3 * per_chunk) << isa_name(isa) << " d " << d;
      EXPECT_DOUBLE_EQ(e.step_flops, 6 * per_chunk) << isa_name(isa) << " d " << d;
      EXPECT_GT(e.qk_seconds, 0.0);
      EXPECT_GT(e.pv_seconds, 0.0);
      EXPECT_GT(e.step_seconds, 0.0);
    }
  }
}

TEST(EngineProbe, RefusesBadArgumentsByName) {
  auto argument_of = [](int64_t d, int64_t chunks, int repeats) {
    try {
      engine_probe(d, chunks, repeats);
    } catch (const InvalidArgument& e) {
      return e.argument();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(argument_of(0, 1, 1), "head_dim");
  EXPECT_EQ(argument_of(1025, 1, 1), "head_dim");
  EXPECT_EQ(argument_of(64, 0, 1), "chunks");
  EXPECT_EQ(argument_of(64, 1, 0), "repeats");
}

TEST(AlignedStorage, StartsOnACacheLine) {
  for (std::size_t n : {0u, 1u, 3u, 16u, 1000u}) {
    AlignedFloatArray a(aligned_floats(n));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.get()) % 64, 0u) << n;
    AlignedFloats v(n + 1);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u) << n;
    v.resize(4 * n + 7);  // a reallocation keeps the alignment
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u) << n;
  }
}

}  // namespace
}  // namespace sparseattn::cpu
