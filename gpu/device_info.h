// What CUDA devices this process can see. Safe to call on a machine without a GPU or
// driver: it then reports none, so a CUDA build still runs on the CPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pagedgen::gpu {

struct DeviceInfo {
  int index;
  std::string name;
  int compute_major;
  int compute_minor;
  std::size_t total_bytes;
};

// Every visible device; empty when there is no driver or no device (the reason goes to
// `why_none` when given; `none_installed`, when given, is set when the machine simply has
// no NVIDIA driver or device, as opposed to one that failed).
std::vector<DeviceInfo> list_devices(std::string* why_none = nullptr, bool* none_installed = nullptr);

}  // namespace pagedgen::gpu
