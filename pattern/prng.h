// The counter-based PRNG every random pattern draws from (contract §3).
//
// Why counter-based: BigBird's random blocks must be identical on the CPU, on the GPU
// and in the graph module, whatever order rows are built in and however many threads
// build them. A stream is a pure function of its key (seed, head, row); draw t of the
// stream is a pure function of (key, t). No global state, no standard-library
// distribution (their algorithms differ between library versions).
//
// The mixing function is SplitMix64's finalizer (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014). docs/patterns.md restates the exact
// algorithm so other implementations (e.g. a NumPy script) can reproduce every table.
#pragma once

#include <cstdint>

#include "pattern/hd.h"

namespace sparseattn {

SPARSEATTN_HD uint64_t splitmix64_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Key of the stream for (seed, head, row); `row` is a query index for token-level
// random keys and a query-block index for BigBird's random blocks.
SPARSEATTN_HD uint64_t prng_stream_key(uint64_t seed, uint64_t head, uint64_t row) {
  return splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ head) ^ row);
}

// Draw number `counter` (0, 1, 2, ...) of the stream `key`: 64 uniform bits.
SPARSEATTN_HD uint64_t prng_bits(uint64_t key, uint64_t counter) {
  return splitmix64_mix(key ^ splitmix64_mix(counter));
}

// A uniform integer in [0, bound), bound >= 1, unbiased by rejection: draws are taken
// from the stream starting at *counter, which advances past every draw used.
SPARSEATTN_HD uint64_t prng_uniform_below(uint64_t key, uint64_t* counter, uint64_t bound) {
  // Largest multiple of bound that fits in 2^64; draws at or above it are rejected.
  const uint64_t limit = ~0ull - (~0ull % bound);
  for (;;) {
    const uint64_t x = prng_bits(key, (*counter)++);
    if (x < limit || limit == 0) return x % bound;
  }
}

}  // namespace sparseattn
