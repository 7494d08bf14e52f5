#include "device_info.h"

#include <cuda_runtime.h>

#include <filesystem>

namespace pagedgen::gpu {

std::vector<DeviceInfo> list_devices(std::string* why_none, bool* none_installed) {
  std::vector<DeviceInfo> devices;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without the NVIDIA kernel driver CUDA says "driver version is insufficient": say what
    // is really missing.
    const bool driver_loaded = std::filesystem::exists("/proc/driver/nvidia/version");
    if (none_installed != nullptr) *none_installed = !driver_loaded || status == cudaErrorNoDevice;
    if (why_none != nullptr)
      *why_none = driver_loaded ? cudaGetErrorString(status) : "no NVIDIA driver is loaded on this machine";
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    devices.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (devices.empty() && why_none != nullptr) *why_none = "no CUDA device found";
  if (devices.empty() && none_installed != nullptr) *none_installed = true;
  return devices;
}

}  // namespace pagedgen::gpu
