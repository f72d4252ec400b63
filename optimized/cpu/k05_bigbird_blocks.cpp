// k05 — BigBird block-sparse attention over the block table, float32 (Zaheer et al. 2020,
// §2 and App. D: global, window and random key blocks per query block).
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves pattern kinds `bigbird` (ITC) and `bigbird-etc`, any
// block_size, seq_len not a multiple of it, zero random blocks, per-head random tables,
// key padding. Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (one panel per kv head, shared by its
// g query heads (layout_walk.h));
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k05_bigbird_blocks_bf16, kernels_bf16.h): the same walk on the bf16 engines,
// kTolBfloat16 on bf16-rounded inputs.
//
// What changed since k04: the keys are no longer computed from a formula (band, global
// list) but read from the materialized layout — for BigBird the tile is the block, so a
// query block's row of the layout *is* its block table: blocks 0 and nb-1, q-1..q+1 and
// the r random blocks, ascending, each once (set semantics: a random block that is also a
// window block is listed once because the layout is a set). Each listed block is a dense
// b×b tile fed to the engine unmasked, read in place from the panel (flash_tile.h,
// panel.h: no copy per query tile); only partial tiles (ETC's global tokens when g is
// not a multiple of b) use their bitmask. The random draws were made once, by
// materialize() from the counter-based PRNG — the kernel never draws.
// Why: block-sparse work is O(n · (3 + 2 + r) · b) and every chunk is a full 64-key tile;
// what is left is that the random blocks are scattered over the panel, so their first
// reads miss the cache.
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5, avx512
// build, 2 threads), row "BigBird b64 r3, n 16384": 61% of the FMA peak per CPU-second
// (threshold 65%: not met; that page says how much this point moves between runs).
// Earlier figures, the bf16 twin's and the tuning history: optimized/cpu/TUNING.md.
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
