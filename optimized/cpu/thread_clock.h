// The calling thread's CPU time, for the one-thread probes (engine_probe.cpp, the bf16
// engine's rate probe in dispatch_bf16.cpp): time slices lost to other jobs on a shared
// machine do not count, and another thread's work is not mixed in (api/peak_probe.h's
// process clock sums every thread).
#pragma once

#include <time.h>

namespace sparseattn::cpu {

// Seconds of CPU the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace sparseattn::cpu
