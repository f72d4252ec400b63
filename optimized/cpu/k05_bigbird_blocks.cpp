// k05 — BigBird block-sparse attention over the block table, float32 (Zaheer et al. 2020,
// §2 and App. D: global, window and random key blocks per query block).
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves pattern kinds `bigbird` (ITC) and `bigbird-etc`, any
// block_size, seq_len not a multiple of it, zero random blocks, per-head random tables,
// key padding. Bit-identical for any OpenMP thread count.
//
// What changed since k04: the keys are no longer computed from a formula (band, global
// list) but read from the materialized layout — for BigBird the tile is the block, so a
// query block's row of the layout *is* its block table: blocks 0 and nb-1, q-1..q+1 and
// the r random blocks, ascending, each once (set semantics: a random block that is also a
// window block is listed once because the layout is a set). Each listed block is a dense
// b×b tile fed to the engine unmasked; only partial tiles (ETC's global tokens when g is
// not a multiple of b) use their bitmask. The random draws were made once, by
// materialize() from the counter-based PRNG — the kernel never draws.
// Why: block-sparse work is O(n · (3 + 2 + r) · b) and every chunk is a full 64-key tile.
// Measured effect (docs/benchmarks.md, block 64, r = 3): 46× faster than the oracle a1 at
// n = 4096; 39% of peak at n = 4096, 32% at n = 65536 (target 45% at n = 16384: missed;
// the scattered random blocks make each chunk copy a cold read).
// Since the engine reads K and V in place (flash_tile.h, panel.h) a block is no longer
// copied per query tile: 1 thread, avx512, n = 16384, per CPU-second: 49% → 68–70%.
// Tried and dropped: prefetching the next listed block's keys and values while a chunk
// computes (4 runs each: 64–66% against 65–69% without).
// bf16 twin (k05_bigbird_blocks_bf16, kernels_bf16.h): the same walk on the bf16 engines,
// kTolBfloat16 on bf16-rounded inputs. Measured (bench_cpu, b 64, r 3, head_dim 64,
// 1 thread, shared machine, AVX512-BF16): 1.87× the float32 entry at n = 4096, 1.88× at
// n = 16384 (the guard, the panel packing and the entry's rounding, about a third of the
// bf16 entry's time, do not halve).
#include "optimized/cpu/flash_tile_bf16.h"
#include "optimized/cpu/layout_walk.h"

SPARSEATTN_ISA_BEGIN

bool k05_serves(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::bigbird || pattern.spec.kind == PatternKind::bigbird_etc;
}

void k05_bigbird_blocks(const Inputs& in, const Outputs& out) {
  require_served(k05_serves(*in.pattern), *in.pattern, "cpu_k05_bigbird_blocks",
                 "bigbird, bigbird-etc");
  run_layout_kernel<Float32Engine>(in, out, /*coalesce=*/false);
}

void k05_bigbird_blocks_bf16(const InputsBf16& in, const Outputs& out) {
  require_served(k05_serves(*in.pattern), *in.pattern, "cpu_k05_bigbird_blocks_bf16",
                 "bigbird, bigbird-etc");
  with_bf16_engine([&](auto engine) {
    run_layout_kernel<decltype(engine)>(in, out, /*coalesce=*/false);
  });
}

SPARSEATTN_ISA_END
