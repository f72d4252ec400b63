// The float32 engine's own ceiling on this machine, measured: FlashTile's two micro-kernels
// (QKᵀ and P·V, flash_tile.h's qk_rows / pv_rows) and a whole tile step (the two products
// plus the online softmax) timed alone on the calling thread, with every operand hot in
// the caches — no packing, no masks, no threads, no memory traffic beyond L2.
//
// Why: the targets report (bench/targets.h) holds each kernel to a fraction of the FMA
// probe (fma_probe.cpp), and a static count of the engine's instructions (2d FMAs against
// the softmax's ~18–23 operations per vector of scores) says what an ideal core could
// reach. A core's real issue rules (which pipes take a broadcast, a vscalefps, a split
// load) differ between machines, so the report also needs what the engine's loops
// actually reach here: a kernel cannot run faster than its own tile step on hot data.
// `bench_cpu` runs this as `engine_parts/D<head_dim>` (docs/benchmarks.md, "What bounds a
// kernel: the note").
#pragma once

#include <cstdint>

namespace sparseattn::cpu {

// CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID), best of `repeats`, for
// `chunks` chunks of kBr query rows × kBc keys at head_dim (key and value width alike):
//   qk    the QKᵀ micro-kernel over the tile's row groups, one chunk's keys (2·kBr·kBc·d FLOPs)
//   pv    the P·V micro-kernel, the same shape (2·kBr·kBc·d FLOPs)
//   step  FlashTile::step on a dense chunk, softmax included (4·kBr·kBc·d FLOPs), the
//         chunks cycling over a panel of 16 chunks (head_dim 64: 512 KiB of K and V, in L2)
// flops_* are the FLOPs each figure covers, counted as the benchmarks count (4d per score).
struct EngineProbe {
  int64_t head_dim = 0;
  double qk_seconds = 0.0, pv_seconds = 0.0, step_seconds = 0.0;
  double qk_flops = 0.0, pv_flops = 0.0, step_flops = 0.0;
};

// The active SIMD build's engine (isa.h). head_dim in [1, 1024]; chunks >= 1; repeats >= 1.
// Throws InvalidArgument naming the argument otherwise. Single-threaded by design: it
// measures one core, as the "per CPU-second" figures it is set beside do.
EngineProbe engine_probe(int64_t head_dim, int64_t chunks, int repeats = 3);

namespace avx2 {
EngineProbe engine_probe(int64_t head_dim, int64_t chunks, int repeats);
}
namespace avx512 {
EngineProbe engine_probe(int64_t head_dim, int64_t chunks, int repeats);
}

}  // namespace sparseattn::cpu
