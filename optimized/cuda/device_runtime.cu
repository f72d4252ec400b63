#include "optimized/cuda/device_runtime.h"

#include <map>
#include <mutex>
#include <utility>

namespace sparseattn {
namespace cuda {

void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                     cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls report their own
    if (why != nullptr) *why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "cudaGetDeviceCount found 0 devices";
    return false;
  }
  return true;
}

void require_device(const std::string& what) {
  std::string why;
  if (!device_available(&why)) throw RuntimeError("no CUDA device: " + why + " (" + what + " needs one)");
}

void configure_shared_memory(const void* kernel, size_t bytes, const std::string& what,
                             int64_t value) {
  // Done once per (kernel, device, size): the device query and cudaFuncSetAttribute stay
  // out of every later launch, so a timed launch (bench_cuda) times the kernel alone.
  static std::mutex mutex;
  static std::map<int, int> optin_of;                            // device -> opt-in bytes
  static std::map<std::pair<const void*, int>, size_t> granted;  // (kernel, device) -> bytes
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(kernel, device);
  const auto done = granted.find(key);
  if (done != granted.end() && done->second >= bytes) return;
  auto optin = optin_of.find(device);
  if (optin == optin_of.end()) {
    int bytes_optin = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    optin = optin_of.emplace(device, bytes_optin).first;
  }
  require(bytes <= static_cast<size_t>(optin->second), what, value,
          "needs " + std::to_string(bytes) + " bytes of shared memory per block; this device offers " +
              std::to_string(optin->second));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
  granted[key] = bytes;
}

}  // namespace cuda
}  // namespace sparseattn
