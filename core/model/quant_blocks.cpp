// The host side of quant_blocks.h: the optional format and whole runs of blocks.
#include "model/quant_blocks.h"

#include "util/error.h"

namespace pagedgen {

std::optional<QuantFormat> quant_format(GgmlType type) {
  const QuantFormat format = quant_format_or_zero(type);
  if (format.block_elements == 0) return std::nullopt;
  return format;
}

void decode_quant_blocks(GgmlType type, const uint8_t* src, std::size_t num_elements, QuantBlock32* out) {
  const std::optional<QuantFormat> format = quant_format(type);
  PG_CHECK(format.has_value(), "{} is not a quantized block format", ggml_type_name(type));
  PG_CHECK(num_elements % format->block_elements == 0, "{} elements of {} are not whole blocks", num_elements,
           ggml_type_name(type));
  const std::size_t num_blocks = num_elements / format->block_elements;
  const int per_block = static_cast<int>(format->block_elements / 32);
  for (std::size_t b = 0; b < num_blocks; ++b, src += format->block_bytes)
    for (int j = 0; j < per_block; ++j) *out++ = decode_quant_block32(type, src, j);
}

}  // namespace pagedgen
