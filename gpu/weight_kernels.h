// Kernels that fill weight tensors on the device: float32 host data converted to the
// device dtype, and dummy weights generated in place (model/dummy_values.h), so an 8B
// model never exists as float32 anywhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace pagedgen::gpu {

// dst[i] = T(src[i]) for i < n; src and dst on the device.
template <typename T>
void launch_convert_from_float(const float* src, T* dst, int64_t n, cudaStream_t stream);

// dst[i] = T(ones ? 1 : dummy_value(seed, tensor_id, i, scale)) for i < n.
template <typename T>
void launch_fill_dummy(T* dst, int64_t n, uint64_t seed, uint32_t tensor_id, float scale, bool ones,
                       cudaStream_t stream);

}  // namespace pagedgen::gpu
