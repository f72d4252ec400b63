// This machine's float32 FMA ceiling, measured (not looked up): every OpenMP thread runs
// 12 independent chains of fused multiply-adds on the active SIMD build's vectors (8 or
// 16 lanes, optimized/cpu/isa.h) — enough chains to cover the FMA
// latency (4-5 cycles) on both FMA pipes — so the loop is throughput bound. Benchmarks
// report every kernel's GFLOP/s as a fraction of this number, measured in the same run.
#pragma once

#include <cstdint>

namespace sparseattn::api {

// FLOPs (2 per lane per FMA) done by one call of fma_probe(iterations) on all threads.
double fma_probe_flops(int64_t iterations);
// Runs the probe on the OpenMP team; returns a value that depends on every result, so the
// compiler cannot drop the work.
float fma_probe(int64_t iterations);
// Best of `repeats` timed probes: wall-clock GFLOP/s of the whole team, and GFLOP per
// second of process CPU time — the rate of one core that is actually running, which a
// machine shared with other jobs does not dilute (time slices lost to them cost wall
// time, not CPU time).
struct Peak {
  double gflops = 0.0;      // wall clock, all threads
  double cpu_gflops = 0.0;  // per CPU-second: one running core
};
// The start-up probe: best of 5 × 20M iterations (~40 ms each on one 512-bit FMA core).
inline constexpr int64_t kProbeIterations = 20'000'000;
// The interleaved probe bench_cpu runs right before each benchmark's timed loop: best of
// 3 × 3M iterations, tens of ms in all, so the fraction of peak is taken against the
// machine as it was next to the measurement, not at start-up.
inline constexpr int64_t kShortProbeIterations = 3'000'000;
inline constexpr int kShortProbeRepeats = 3;
Peak measure_peak(int repeats = 5, int64_t iterations = kProbeIterations);

// Process CPU time (all threads), seconds.
double process_cpu_seconds();

}  // namespace sparseattn::api
