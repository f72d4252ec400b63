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

// Reads `bytes` bytes of src `repeats` times, one contiguous slice per thread as copy_probe,
// summing it as 64-bit words (vector integer adds, far faster than the memory): what a
// kernel that only reads — a decode step reading its KV cache — can get from the memory
// system, next to copy_probe's read + written figure. Returns the sum (src may have any
// length; a tail of fewer than 8 bytes is left out), so the reads cannot be dropped. Bytes
// moved per repeat: bytes (read only).
uint64_t read_probe(const unsigned char* src, int64_t bytes, int repeats);

}  // namespace sparseattn::cpu
