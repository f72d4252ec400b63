// The FMA peak probe of the active SIMD build (isa.h): every OpenMP thread runs 12
// independent chains of fused multiply-adds on the build's widest vector (8 floats for
// avx2, 16 for avx512) — enough chains to cover the FMA latency (4-5 cycles) on both FMA
// pipes — so the loop is throughput bound. api/peak_probe.h turns it into GFLOP/s, the
// ceiling every kernel's "fraction of peak" is measured against; probing the widest FMA
// keeps that fraction honest when the kernels use 512-bit vectors.
#include <omp.h>

#include <cstdint>

#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN

float fma_probe(int64_t iterations) {
  float total = 0.0f;
#pragma omp parallel reduction(+ : total)
  {
    const float seed = static_cast<float>(omp_get_thread_num() + 1) * 1e-3f;
    // Twelve named accumulators (not an array) so they live in registers.
    Vec a0 = splat(seed), a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f, a4 = a0 + 4.0f,
        a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f, a8 = a0 + 8.0f, a9 = a0 + 9.0f,
        a10 = a0 + 10.0f, a11 = a0 + 11.0f;
    const Vec m = splat(0.999999f), c = splat(1e-7f);
    for (int64_t it = 0; it < iterations; ++it) {
      a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
      a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
      a8 = a8 * m + c; a9 = a9 * m + c; a10 = a10 * m + c; a11 = a11 * m + c;
      // An empty asm that "may change" the chains: the loop cannot be folded away.
      __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                       "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
    }
    const Vec sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
    total += hsum(sum);
  }
  return total;
}

int fma_probe_lanes() { return kLanes; }

SPARSEATTN_ISA_END
