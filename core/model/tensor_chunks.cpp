#include "model/tensor_chunks.h"

#include <algorithm>
#include <cstring>

#include "model/dequant.h"
#include "util/error.h"
#include "util/half.h"

namespace pagedgen {

std::size_t weight_dtype_bytes(WeightDtype dtype) { return dtype == WeightDtype::kFloat32 ? 4 : 2; }

std::string_view weight_dtype_name(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::kFloat32:
      return "float32";
    case WeightDtype::kFloat16:
      return "float16";
    case WeightDtype::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

std::vector<TensorChunk> tensor_chunks(GgmlType type, std::size_t num_elements, std::size_t max_chunk_bytes) {
  const std::optional<GgmlTypeLayout> layout = ggml_type_layout(static_cast<uint32_t>(type));
  PG_CHECK(layout && can_dequantize(type), "{} tensors cannot be converted", ggml_type_name(type));
  PG_CHECK(num_elements % layout->block_elements == 0, "{} elements of {} are not whole blocks", num_elements,
           ggml_type_name(type));
  const std::size_t num_blocks = num_elements / layout->block_elements;
  const std::size_t blocks_per_chunk = std::max<std::size_t>(1, max_chunk_bytes / layout->block_bytes);
  std::vector<TensorChunk> chunks;
  for (std::size_t block = 0; block < num_blocks; block += blocks_per_chunk) {
    const std::size_t n = std::min(blocks_per_chunk, num_blocks - block);
    chunks.push_back({block * layout->block_elements, n * layout->block_elements, block * layout->block_bytes,
                      n * layout->block_bytes});
  }
  return chunks;
}

void convert_chunk(GgmlType type, std::span<const std::byte> src, WeightDtype dtype, std::span<std::byte> dst) {
  const std::size_t element_bytes = weight_dtype_bytes(dtype);
  PG_CHECK(dst.size() % element_bytes == 0, "{} bytes are not whole {} values", dst.size(), weight_dtype_name(dtype));
  std::vector<float> values(dst.size() / element_bytes);
  dequantize(type, src, values);
  if (dtype == WeightDtype::kFloat32) {
    std::memcpy(dst.data(), values.data(), dst.size());
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = dtype == WeightDtype::kFloat16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
    dst[2 * i] = static_cast<std::byte>(bits & 0xff);
    dst[2 * i + 1] = static_cast<std::byte>(bits >> 8);
  }
}

}  // namespace pagedgen
