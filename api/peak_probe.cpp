// The FMA peak probe (peak_probe.h): the loop itself is optimized/cpu/fma_probe.cpp, built
// per SIMD build like the kernels, so the peak is that of the vectors the kernels use.
#include "api/peak_probe.h"

#include <omp.h>

#include <time.h>

#include <algorithm>
#include <chrono>

#include "optimized/cpu/isa.h"

namespace sparseattn::api {

constexpr int kChains = 12;  // optimized/cpu/fma_probe.cpp

double fma_probe_flops(int64_t iterations) {
  return static_cast<double>(omp_get_max_threads()) * static_cast<double>(iterations) * kChains *
         cpu::fma_probe_lanes() * 2.0;
}

float fma_probe(int64_t iterations) { return cpu::fma_probe(iterations); }

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

Peak measure_peak(int repeats, int64_t iterations) {
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

}  // namespace sparseattn::api
