#include "weight_kernels.h"

#include <stdexcept>

#include "cuda_check.h"
#include "dtype_traits.cuh"
#include "model/dummy_values.h"
#include "model/quant_blocks.h"
#include "util/half.h"

namespace pagedgen::gpu {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65536;

// One element per thread: the plain types.
template <typename T>
__global__ void dequantize_plain_kernel(GgmlType type, const uint8_t* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float value;
    if (type == GgmlType::F32)
      value = float_from_bits(quant_detail::load_u32(src + 4 * i));
    else if (type == GgmlType::F16)
      value = half_to_float(static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
    else
      value = bfloat16_to_float(static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
    dst[i] = from_float<T>(value);
  }
}

// One 32-weight sub-block per thread: the quantized formats (model/quant_blocks.h).
template <typename T>
__global__ void dequantize_blocks_kernel(GgmlType type, QuantFormat format, const uint8_t* src, T* dst,
                                         int64_t num_sub_blocks) {
  const int per_block = static_cast<int>(format.block_elements / 32);
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < num_sub_blocks;
       s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const QuantBlock32 block =
        decode_quant_block32(type, src + (s / per_block) * format.block_bytes, static_cast<int>(s % per_block));
    T* out = dst + 32 * s;
    for (int i = 0; i < 32; ++i) out[i] = from_float<T>(quant_weight(format, block, i));
  }
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
void launch_dequantize(GgmlType type, const std::byte* src, int64_t num_elements, T* dst, cudaStream_t stream) {
  if (num_elements == 0) return;
  const auto* bytes = reinterpret_cast<const uint8_t*>(src);
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    dequantize_plain_kernel<T><<<blocks_for(num_elements), kThreads, 0, stream>>>(type, bytes, dst, num_elements);
  } else {
    const QuantFormat format = quant_format_or_zero(type);
    // The upload plan checked both (no fmt in .cu files: a plain exception for our own bug).
    if (format.block_elements == 0 || num_elements % format.block_elements != 0)
      throw std::logic_error("launch_dequantize: " + ggml_type_name(type) + " values that are not whole blocks");
    const int64_t num_sub_blocks = num_elements / 32;
    dequantize_blocks_kernel<T>
        <<<blocks_for(num_sub_blocks), kThreads, 0, stream>>>(type, format, bytes, dst, num_sub_blocks);
  }
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_fill_dummy(T* dst, int64_t n, uint64_t seed, uint32_t tensor_id, float scale, bool ones,
                       cudaStream_t stream) {
  if (n == 0) return;
  fill_dummy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dst, n, seed, tensor_id, scale, ones);
  CUDA_CHECK(cudaGetLastError());
}

#define PG_INSTANTIATE(T)                                                                    \
  template void launch_dequantize<T>(GgmlType, const std::byte*, int64_t, T*, cudaStream_t); \
  template void launch_fill_dummy<T>(T*, int64_t, uint64_t, uint32_t, float, bool, cudaStream_t);
PG_INSTANTIATE(float)
PG_INSTANTIATE(__half)
PG_INSTANTIATE(__nv_bfloat16)
#undef PG_INSTANTIATE

}  // namespace pagedgen::gpu
