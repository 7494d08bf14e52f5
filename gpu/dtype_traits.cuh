// Device-side conversions between float and the storage types of device_dtype.h. For .cu
// files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace pagedgen::gpu {

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

// The 16 / sizeof(T) elements of a 16-byte vector of T (one uint4 load), as floats: exact.
template <typename T>
__device__ __forceinline__ void unpack_vector(const uint4& v, float (&out)[16 / sizeof(T)]) {
  const T* elems = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < static_cast<int>(16 / sizeof(T)); ++i) out[i] = to_float(elems[i]);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace pagedgen::gpu
