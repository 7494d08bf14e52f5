#include "device_dtype.h"

namespace pagedgen::gpu {

std::optional<DeviceDtype> parse_device_dtype(std::string_view text) {
  if (text == "bfloat16" || text == "bf16") return DeviceDtype::BF16;
  if (text == "float16" || text == "fp16" || text == "half") return DeviceDtype::F16;
  if (text == "float32" || text == "fp32" || text == "float") return DeviceDtype::F32;
  return std::nullopt;
}

std::string_view device_dtype_name(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::F32:
      return "float32";
    case DeviceDtype::F16:
      return "float16";
    case DeviceDtype::BF16:
      return "bfloat16";
  }
  return "?";
}

std::size_t device_dtype_bytes(DeviceDtype dtype) { return dtype == DeviceDtype::F32 ? 4 : 2; }

}  // namespace pagedgen::gpu
