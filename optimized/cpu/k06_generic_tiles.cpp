// k06 — generic sparse attention over the canonical layout, float32 (FlexAttention's
// BlockMask idea; FlashAttention's tiling, Dao et al. 2022, Alg. 1).
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves every pattern kind (dense, window, longformer, random,
// bigbird, bigbird-etc, hierarchical, explicit, per-head), key padding.
// Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (one panel per kv head, shared by its
// g query heads (layout_walk.h));
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k06_generic_tiles_bf16, kernels_bf16.h): this body on the bf16 engines of
// flash_tile_bf16.h, kTolBfloat16 on bf16-rounded inputs.
//
// What changed since k05: the same layout walk, opened to any pattern — per-head layouts,
// partial tiles everywhere (token-level patterns), any tile size — and consecutive tiles
// with adjacent keys are coalesced into chunks of up to 64 keys, so a layout built with
// small tiles still feeds the micro-kernels full chunks.
// Why: one kernel that runs whatever the pattern module can materialize; the specialized
// kernels k01–k05 are checked against the oracle, and k06 is their fallback. Against them:
// on BigBird at block 64 it feeds k05's chunks and on the undilated window k02's; on the
// dilated window it is slower than k03 (it computes every second score only to mask it)
// and on Longformer slower than k04 (bitmask reads per score on every partial tile).
// Measured: docs/benchmarks.md, "Measured: a per-head mix of window and BigBird heads"
// (2026-11-30 12:49 UTC, 2 threads, shared machine, before that day's engine changes), row
// "cpu_k06_generic_tiles (the mix; float32, 2 threads)": 179.8 ms per call at n = 8192.
// Earlier figures and the bf16 twin: optimized/cpu/TUNING.md.
#include "optimized/cpu/flash_tile_bf16.h"
#include "optimized/cpu/layout_walk.h"

SPARSEATTN_ISA_BEGIN

bool k06_serves(const Pattern&) { return true; }

void k06_generic_tiles(const Inputs& in, const Outputs& out) {
  run_layout_kernel<Float32Engine>(in, out, /*coalesce=*/true);
}

void k06_generic_tiles_bf16(const InputsBf16& in, const Outputs& out) {
  with_bf16_engine([&](auto engine) {
    run_layout_kernel<decltype(engine)>(in, out, /*coalesce=*/true);
  });
}

SPARSEATTN_ISA_END
