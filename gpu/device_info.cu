#include "device_info.h"

#include <cuda_runtime.h>

namespace pagedgen::gpu {

std::vector<DeviceInfo> list_devices(std::string* why_none) {
  std::vector<DeviceInfo> devices;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_none != nullptr) *why_none = cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    devices.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (devices.empty() && why_none != nullptr) *why_none = "no CUDA device found";
  return devices;
}

}  // namespace pagedgen::gpu
