#include "optimized/cuda/device_runtime.h"

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
  int device = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  require(bytes <= static_cast<size_t>(optin), what, value,
          "needs " + std::to_string(bytes) + " bytes of shared memory per block; this device offers " +
              std::to_string(optin));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
}

}  // namespace cuda
}  // namespace sparseattn
