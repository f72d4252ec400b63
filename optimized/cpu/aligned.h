// 64-byte-aligned float storage for the CPU engines' panels and tile scratch.
//
// Why: a 512-bit load from an address that is not a multiple of 64 spans two cache lines
// and costs two of the core's load slots. new[] and std::vector give 16-byte alignment and
// a panel block's rows are 128 bytes apart, so a block whose base sat 16, 32 or 48 bytes
// off a line had every vector load split. Measured with a stand-alone copy of the QKᵀ
// micro-kernel and with engine_probe.h (docs/benchmarks.md, "What bounds a kernel: the
// note"; optimized/cpu/TUNING.md). Used by the float32 engine (panel.h, flash_tile.h).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace sparseattn::cpu {

inline constexpr std::size_t kCacheLine = 64;

// std::aligned_alloc wants a size that is a multiple of the alignment.
inline void* aligned_bytes(std::size_t bytes) {
  const std::size_t rounded = (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
  void* p = std::aligned_alloc(kCacheLine, rounded == 0 ? kCacheLine : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// An owning array of n floats on a cache-line boundary (contents uninitialized).
using AlignedFloatArray = std::unique_ptr<float[], AlignedFree>;
inline float* aligned_floats(std::size_t n) { return static_cast<float*>(aligned_bytes(n * sizeof(float))); }

// A std::vector whose storage starts on a cache-line boundary.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT: rebinding, as the standard asks
  T* allocate(std::size_t n) { return static_cast<T*>(aligned_bytes(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const { return false; }
};
using AlignedFloats = std::vector<float, AlignedAllocator<float>>;

}  // namespace sparseattn::cpu
