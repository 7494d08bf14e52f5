#include "gpu_test_device.h"

#include "device_info.h"

namespace pagedgen::test {

const std::string& gpu_absent_reason() {
  static const std::string reason = [] {
    std::string why;
    if (!gpu::list_devices(&why).empty()) return std::string();
    return why.empty() ? std::string("no CUDA device found") : why;
  }();
  return reason;
}

}  // namespace pagedgen::test
