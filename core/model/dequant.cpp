// Tensor types to float32. The quantized formats' bit layouts live in quant_blocks.h; a
// weight is (d * sub_scale) * (q - offset) [+ m], ggml's order of operations. Every product
// is exact in float (an f16 scale has 11 significant bits, 6-bit scales and quants add at
// most 13), so each value rounds once at most, in the final add: results match ggml bit
// for bit, with or without FMA contraction.
#include "model/dequant.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "model/quant_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace pagedgen {
namespace {

using Bytes = const uint8_t*;

uint16_t load_u16(Bytes p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32(Bytes p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

float load_half(Bytes p) { return half_to_float(load_u16(p)); }

void dequant_f32(Bytes src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(load_u32(src + 4 * i));
}

void dequant_f16(Bytes src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = load_half(src + 2 * i);
}

void dequant_bf16(Bytes src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    dst[i] = std::bit_cast<float>(static_cast<uint32_t>(load_u16(src + 2 * i)) << 16);
  }
}

// The quantized formats, one stored block (32 or 256 weights) at a time.
void dequant_quant(GgmlType type, const QuantFormat& format, Bytes src, float* dst, std::size_t num_blocks) {
  QuantBlock32 blocks[8];
  const std::size_t per_block = format.block_elements / 32;
  for (std::size_t b = 0; b < num_blocks; ++b, src += format.block_bytes) {
    decode_quant_blocks(type, src, format.block_elements, blocks);
    for (std::size_t j = 0; j < per_block; ++j, dst += 32)
      for (int i = 0; i < 32; ++i) dst[i] = quant_weight(format, blocks[j], i);
  }
}

}  // namespace

bool can_dequantize(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> dst) {
  if (!can_dequantize(type)) {
    fail(
        "cannot dequantize tensor type {}: pagedgen supports F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
        "Q5_0, Q5_1, Q4_K, Q5_K and Q6_K; use a model quantized to one of those",
        ggml_type_name(type));
  }
  const std::optional<GgmlTypeLayout> layout = ggml_type_layout(static_cast<uint32_t>(type));
  PG_CHECK(layout.has_value(), "type {} has no layout", ggml_type_name(type));
  PG_CHECK(dst.size() % layout->block_elements == 0, "{} elements of {} are not whole blocks", dst.size(),
           ggml_type_name(type));
  const std::size_t num_blocks = dst.size() / layout->block_elements;
  PG_CHECK(src.size() == num_blocks * layout->block_bytes, "{} bytes given for {} blocks of {} ({} bytes each)",
           src.size(), num_blocks, ggml_type_name(type), layout->block_bytes);
  const auto* in = reinterpret_cast<Bytes>(src.data());
  float* out = dst.data();
  switch (type) {
    case GgmlType::F32:
      dequant_f32(in, out, num_blocks);
      break;
    case GgmlType::F16:
      dequant_f16(in, out, num_blocks);
      break;
    case GgmlType::BF16:
      dequant_bf16(in, out, num_blocks);
      break;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      dequant_quant(type, *quant_format(type), in, out, num_blocks);
      break;
    default:
      PG_CHECK(false, "can_dequantize and dequantize disagree on {}", ggml_type_name(type));
  }
}

}  // namespace pagedgen
