// The CUDA runtime, checked: every call and every launch goes through CUDA_CHECK, which
// throws RuntimeError("<file>:<line>: <call>: <CUDA error string>") — never a silent
// failure (fail loudly). Also: whether a device exists, and RAII device buffers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace sparseattn {
namespace cuda {

// Throws RuntimeError naming the call, file:line and CUDA's error string unless `err`
// is cudaSuccess.
void check_cuda(cudaError_t err, const char* call, const char* file, int line);

#define CUDA_CHECK(call) ::sparseattn::cuda::check_cuda((call), #call, __FILE__, __LINE__)
// After every <<<...>>>: launch-configuration errors surface here, at the launch site.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Whether a usable CUDA device exists. Any error from the runtime (no driver, no
// device, a driver older than the runtime) counts as "no device"; `why` gets CUDA's
// words for it.
bool device_available(std::string* why = nullptr);

// Throws RuntimeError("no CUDA device: <why> (<what> needs one)") when none is present.
void require_device(const std::string& what);

// Allows `kernel` up to `bytes` of dynamic shared memory (above 48 KB needs opting in).
// Throws InvalidArgument naming `what` (a head_dim) when the device offers less. Queries
// the device and sets the attribute only the first time a (kernel, device) needs as many
// bytes; later calls return at once (thread-safe).
void configure_shared_memory(const void* kernel, size_t bytes, const std::string& what,
                             int64_t value);

// Owning device allocation of n elements of T (plain cudaMalloc: never managed memory).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { allocate(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  void allocate(size_t n) {
    release();
    if (n == 0) return;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
    size_ = n;
  }
  // Allocates and copies `host` (nothing for an empty vector: ptr() stays null).
  void upload(const std::vector<T>& host) {
    allocate(host.size());
    if (!host.empty())
      CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* host, size_t n) const {
    if (n > size_) throw RuntimeError("DeviceBuffer::download: more elements than allocated");
    if (n != 0) CUDA_CHECK(cudaMemcpy(host, ptr_, n * sizeof(T), cudaMemcpyDeviceToHost));
  }

  T* ptr() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void release() noexcept {
    if (ptr_ != nullptr) cudaFree(ptr_);  // no throw from a destructor
    ptr_ = nullptr;
    size_ = 0;
  }
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cuda
}  // namespace sparseattn
