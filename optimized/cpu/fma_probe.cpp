// The FMA peak probe of the active SIMD build (isa.h): every OpenMP thread runs 12
// independent chains of fused multiply-adds on the build's widest vector (8 floats for
// avx2, 16 for avx512) — enough chains to cover the FMA latency (4-5 cycles) on both FMA
// pipes — so the loop is throughput bound. api/peak_probe.h turns it into GFLOP/s, the
// ceiling every kernel's "fraction of peak" is measured against; probing the widest FMA
// keeps that fraction honest when the kernels use 512-bit vectors.
//
// Beside it, in the avx512 build only, the vdpbf16ps rate probe that picks the bf16 engine
// (kernels_bf16.h, dispatch_bf16.cpp): the same 12 chains on one thread, of vdpbf16ps and
// of 512-bit FMAs, so the two FLOP rates are compared on the same core and clock. It lives
// in detail_bf16, the dot engine's namespace, because the test
// cpu_bf16_instructions_only_in_the_dot_engine allows AVX512-BF16 instructions only there;
// like the engine, it runs only after the cpuid check cpu_has_avx512_bf16().
#include <omp.h>

#include <cstdint>

#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN

namespace {

// `iterations` rounds of 12 independent FMA chains on one thread, seeded by `seed`.
float fma_chains(float seed, int64_t iterations) {
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
  return hsum(sum);
}

}  // namespace

float fma_probe(int64_t iterations) {
  float total = 0.0f;
#pragma omp parallel reduction(+ : total)
  total += fma_chains(static_cast<float>(omp_get_thread_num() + 1) * 1e-3f, iterations);
  return total;
}

int fma_probe_lanes() { return kLanes; }

#if defined(SPARSEATTN_ISA_AVX512)

namespace detail_bf16 {

float fma_probe_one_thread(int64_t iterations) { return fma_chains(1e-3f, iterations); }

float dot_probe(int64_t iterations) {
  // Every pair is (2^-10, 2^-10) · (1, 1) in bf16 (0x3A80, 0x3F80): each instruction adds
  // 2^-9 to every lane, exact in float32 and far from overflow for any practical count.
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3A803A80);
  const __m512bh y = (__m512bh)_mm512_set1_epi32(0x3F803F80);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
         a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (int64_t it = 0; it < iterations; ++it) {
    a0 = _mm512_dpbf16_ps(a0, x, y); a1 = _mm512_dpbf16_ps(a1, x, y);
    a2 = _mm512_dpbf16_ps(a2, x, y); a3 = _mm512_dpbf16_ps(a3, x, y);
    a4 = _mm512_dpbf16_ps(a4, x, y); a5 = _mm512_dpbf16_ps(a5, x, y);
    a6 = _mm512_dpbf16_ps(a6, x, y); a7 = _mm512_dpbf16_ps(a7, x, y);
    a8 = _mm512_dpbf16_ps(a8, x, y); a9 = _mm512_dpbf16_ps(a9, x, y);
    a10 = _mm512_dpbf16_ps(a10, x, y); a11 = _mm512_dpbf16_ps(a11, x, y);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                     "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const __m512 sum = _mm512_add_ps(
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                    _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),
      _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  // Through memory, not _mm512_reduce_add_ps (GCC 12 warns inside that intrinsic).
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (const float x : lanes) total += x;
  return total;
}

}  // namespace detail_bf16

#endif  // SPARSEATTN_ISA_AVX512

SPARSEATTN_ISA_END
