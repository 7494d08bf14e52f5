// The element type the CUDA backend keeps weights, GEMM inputs and the KV cache in:
// bfloat16 by default, float16 or float32 on request (float32 for bit-level comparisons
// with the CPU backend). Norm weights, biases, the residual stream and every accumulation
// stay float32 whatever the choice. No CUDA includes: the app parses the flag.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace pagedgen::gpu {

enum class DeviceDtype { F32, F16, BF16 };

// "bfloat16"/"bf16", "float16"/"fp16"/"half", "float32"/"fp32"/"float".
std::optional<DeviceDtype> parse_device_dtype(std::string_view text);
std::string_view device_dtype_name(DeviceDtype dtype);
std::size_t device_dtype_bytes(DeviceDtype dtype);

}  // namespace pagedgen::gpu
