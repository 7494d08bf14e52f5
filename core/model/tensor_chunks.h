// A stored tensor cut into chunks that fit a staging buffer, and the conversion of one chunk
// to the element type a device keeps weights in. The CUDA backend streams a model's tensors
// to the GPU chunk by chunk (gpu/device_weights.h) and dequantizes each chunk there
// (gpu/dequant_kernels.h); convert_chunk is that kernel's CPU reference, and converting a
// tensor chunk by chunk gives the same bytes as converting it whole.
//
//   tensor bytes:  | block | block | block | block | block | block | block |
//   chunks:        |<---- chunk 0 ------>|<---- chunk 1 ------>|<- chunk 2 ->|
//                  whole blocks each, at most max_chunk_bytes (at least one block)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/ggml_type.h"

namespace pagedgen {

// The element type of converted weights: what the CUDA backend's --dtype names.
enum class WeightDtype { kFloat32, kFloat16, kBFloat16 };

std::size_t weight_dtype_bytes(WeightDtype dtype);
std::string_view weight_dtype_name(WeightDtype dtype);  // "float32", "float16", "bfloat16"

struct TensorChunk {
  std::size_t first_element;
  std::size_t num_elements;
  std::size_t first_byte;  // of the stored tensor
  std::size_t num_bytes;
};

// The chunks of a tensor of `type` with num_elements elements (whole blocks; `type` must be
// one dequantize() reads): each as many whole blocks as fit in max_chunk_bytes, at least one.
std::vector<TensorChunk> tensor_chunks(GgmlType type, std::size_t num_elements, std::size_t max_chunk_bytes);

// Converts `src`, whole blocks of `type`, to dst.size() / weight_dtype_bytes(dtype) values
// of `dtype` (little-endian; float16 and bfloat16 rounded to nearest even): dequantize()'s
// floats, rounded once.
void convert_chunk(GgmlType type, std::span<const std::byte> src, WeightDtype dtype, std::span<std::byte> dst);

}  // namespace pagedgen
