// The copy-bandwidth probe (copy_probe.h). Not per SIMD build: memcpy picks its own vectors,
// and a probe of the memory system should not depend on the kernels' build.
#include "optimized/cpu/copy_probe.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace sparseattn::cpu {

unsigned char copy_probe(const unsigned char* src, unsigned char* dst, int64_t bytes, int repeats) {
  for (int r = 0; r < repeats; ++r) {
#pragma omp parallel
    {
      const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
      // Slices of whole 4 KiB pages, so no two threads write one page.
      const int64_t pages = (bytes + 4095) / 4096;
      const int64_t lo = std::min(bytes, pages * me / team * 4096);
      const int64_t hi = std::min(bytes, pages * (me + 1) / team * 4096);
      if (hi > lo) std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo));
    }
  }
  return bytes > 0 ? dst[bytes - 1] : 0;
}

uint64_t read_probe(const unsigned char* src, int64_t bytes, int repeats) {
  const int64_t words = bytes / 8;
  uint64_t total = 0;
  for (int r = 0; r < repeats; ++r) {
#pragma omp parallel reduction(+ : total)
    {
      const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
      const int64_t lo = words * me / team, hi = words * (me + 1) / team;
      uint64_t sum = 0;
      for (int64_t w = lo; w < hi; ++w) {
        uint64_t x;
        std::memcpy(&x, src + w * 8, sizeof x);
        sum += x;
      }
      total += sum;
    }
  }
  return total;
}

}  // namespace sparseattn::cpu
