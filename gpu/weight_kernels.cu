#include "weight_kernels.h"

#include "cuda_check.h"
#include "dtype_traits.cuh"
#include "model/dummy_values.h"

namespace pagedgen::gpu {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65536;

template <typename T>
__global__ void convert_from_float_kernel(const float* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}

template <typename T>
__global__ void fill_dummy_kernel(T* dst, int64_t n, uint64_t seed, uint32_t tensor_id, float scale, bool ones) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(ones ? 1.0f : dummy_value(seed, tensor_id, static_cast<uint64_t>(i), scale));
}

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return blocks < kMaxBlocks ? static_cast<unsigned>(blocks) : kMaxBlocks;
}

}  // namespace

template <typename T>
void launch_convert_from_float(const float* src, T* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  convert_from_float_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_fill_dummy(T* dst, int64_t n, uint64_t seed, uint32_t tensor_id, float scale, bool ones,
                       cudaStream_t stream) {
  if (n == 0) return;
  fill_dummy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dst, n, seed, tensor_id, scale, ones);
  CUDA_CHECK(cudaGetLastError());
}

#define PG_INSTANTIATE(T)                                                                              \
  template void launch_convert_from_float<T>(const float*, T*, int64_t, cudaStream_t);                 \
  template void launch_fill_dummy<T>(T*, int64_t, uint64_t, uint32_t, float, bool, cudaStream_t);
PG_INSTANTIATE(float)
PG_INSTANTIATE(__half)
PG_INSTANTIATE(__nv_bfloat16)
#undef PG_INSTANTIATE

}  // namespace pagedgen::gpu
