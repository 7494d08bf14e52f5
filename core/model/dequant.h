// Dequantization of ggml block formats to float32, done once at model load.
// Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K.
#pragma once

#include <cstddef>
#include <span>

#include "model/ggml_type.h"

namespace pagedgen {

bool can_dequantize(GgmlType type);

// Converts dst.size() elements of `type` stored in `src` to float.
// dst.size() must be a multiple of the type's block size and src must hold exactly the
// bytes those blocks take (checked; a mismatch is a bug in the caller).
// Throws Error for a type that cannot be dequantized.
void dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> dst);

}  // namespace pagedgen
