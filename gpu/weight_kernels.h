// Kernels that fill weight tensors on the device: a model file's stored bytes (any type
// dequantize() reads, quantized ones included) converted to the device dtype, and dummy
// weights generated in place (model/dummy_values.h), so an 8B model never exists as float32
// anywhere.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "model/ggml_type.h"

namespace pagedgen::gpu {

// dst[i] = T(value i of `src`) for i < num_elements: `src` holds num_elements / block
// elements whole blocks of `type` (F32, F16, BF16 or a quant_format type), both on the
// device. The values are dequantize()'s, rounded once to T: model/tensor_chunks.h's
// convert_chunk is the CPU reference.
template <typename T>
void launch_dequantize(GgmlType type, const std::byte* src, int64_t num_elements, T* dst, cudaStream_t stream);

// dst[i] = T(ones ? 1 : dummy_value(seed, tensor_id, i, scale)) for i < n.
template <typename T>
void launch_fill_dummy(T* dst, int64_t n, uint64_t seed, uint32_t tensor_id, float scale, bool ones,
                       cudaStream_t stream);

}  // namespace pagedgen::gpu
