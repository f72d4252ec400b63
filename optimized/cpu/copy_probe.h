// The copy-bandwidth probe (copy_probe.cpp): what the memory system moves when every OpenMP
// thread streams its own slice of a buffer much larger than the caches into another. A
// decode kernel (k09, decode.h) reads each K/V byte once, so its bytes per second against
// this figure is its fraction of the machine's bandwidth, as fma_probe's GFLOP/s is the
// ceiling of the compute-bound kernels. bench/bench_decode.cpp times it.
#pragma once

#include <cstdint>

namespace sparseattn::cpu {

// Copies `bytes` bytes of src into dst (no overlap) `repeats` times, the range cut into one
// contiguous slice per thread of the OpenMP team (std::memcpy per slice: glibc's widest
// vector copy, with non-temporal stores at these sizes). Returns a byte of dst that depends
// on the last copy, so the work cannot be dropped. Bytes moved per repeat: 2·bytes (read
// and written, the STREAM "copy" convention).
unsigned char copy_probe(const unsigned char* src, unsigned char* dst, int64_t bytes, int repeats);

}  // namespace sparseattn::cpu
