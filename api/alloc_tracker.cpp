// Global operator new/delete with a byte count (alloc_tracker.h). Each block carries a
// 16-byte header holding its size (16 keeps the default new alignment).
#include "api/alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace sparseattn::api {
namespace {

std::atomic<int64_t> g_in_use{0};
std::atomic<int64_t> g_peak{0};
constexpr size_t kHeader = 16;

void* allocate(size_t size) {
  void* base = std::malloc(size + kHeader);
  if (base == nullptr) throw std::bad_alloc();
  *static_cast<size_t*>(base) = size;
  const int64_t now = g_in_use.fetch_add(static_cast<int64_t>(size)) + static_cast<int64_t>(size);
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return static_cast<char*>(base) + kHeader;
}

void release(void* p) {
  if (p == nullptr) return;
  void* base = static_cast<char*>(p) - kHeader;
  g_in_use.fetch_sub(static_cast<int64_t>(*static_cast<size_t*>(base)));
  std::free(base);
}

}  // namespace

int64_t heap_in_use() { return g_in_use.load(); }
int64_t heap_peak() { return g_peak.load(); }
void reset_heap_peak() { g_peak.store(g_in_use.load()); }

}  // namespace sparseattn::api

void* operator new(size_t size) { return sparseattn::api::allocate(size); }
void* operator new[](size_t size) { return sparseattn::api::allocate(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return sparseattn::api::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  try {
    return sparseattn::api::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { sparseattn::api::release(p); }
void operator delete[](void* p) noexcept { sparseattn::api::release(p); }
void operator delete(void* p, size_t) noexcept { sparseattn::api::release(p); }
void operator delete[](void* p, size_t) noexcept { sparseattn::api::release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { sparseattn::api::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { sparseattn::api::release(p); }
