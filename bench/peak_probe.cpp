// The FMA peak probe (peak_probe.h). Compiled with -O3 -ffp-contract=fast so each
// `acc * a + b` is one vfmadd231ps on v8f (optimized/cpu/simd.h).
#include "bench/peak_probe.h"

#include <omp.h>

#include <time.h>

#include <algorithm>
#include <chrono>

#include "optimized/cpu/simd.h"

namespace sparseattn::bench {

using cpu::splat8;
using cpu::v8f;

constexpr int kChains = 12;

double fma_probe_flops(int64_t iterations) {
  return static_cast<double>(omp_get_max_threads()) * static_cast<double>(iterations) * kChains *
         cpu::kLanes * 2.0;
}

float fma_probe(int64_t iterations) {
  float total = 0.0f;
#pragma omp parallel reduction(+ : total)
  {
    const float seed = static_cast<float>(omp_get_thread_num() + 1) * 1e-3f;
    // Twelve named accumulators (not an array) so they live in ymm registers.
    v8f a0 = splat8(seed), a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f, a4 = a0 + 4.0f,
        a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f, a8 = a0 + 8.0f, a9 = a0 + 9.0f,
        a10 = a0 + 10.0f, a11 = a0 + 11.0f;
    const v8f m = splat8(0.999999f), c = splat8(1e-7f);
    for (int64_t it = 0; it < iterations; ++it) {
      a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
      a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
      a8 = a8 * m + c; a9 = a9 * m + c; a10 = a10 * m + c; a11 = a11 * m + c;
      // An empty asm that "may change" the chains: the loop cannot be folded away.
      __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5),
                       "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
    }
    const v8f sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
    total += cpu::hsum8(sum);
  }
  return total;
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

Peak measure_peak(int repeats) {
  const int64_t iterations = 20'000'000;
  volatile float sink = fma_probe(iterations / 10);  // warm up: clocks, threads
  Peak best;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    sink = fma_probe(iterations);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = process_cpu_seconds() - c0;
    best.gflops = std::max(best.gflops, fma_probe_flops(iterations) / s / 1e9);
    best.cpu_gflops = std::max(best.cpu_gflops, fma_probe_flops(iterations) / cpu / 1e9);
  }
  (void)sink;
  return best;
}

}  // namespace sparseattn::bench
