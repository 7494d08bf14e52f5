// The quantized ggml formats read as integers and scales, 32 weights at a time: the one
// place that knows their bit layouts. Dequantization (dequant.h) turns a block into floats;
// the CPU's fast path (backend/packed_matrix.h) keeps the integers and multiplies them
// with quantized activations.
//
// Weight i of a block is   (d * sub_scale[i / 16]) * (q[i] - offset)  [+ m when has_min]
// with every product exact in float, so that is also ggml's value, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "model/ggml_type.h"

namespace pagedgen {

struct QuantFormat {
  int bits;               // of a stored integer: 4, 5, 6 or 8 (8: signed, the others unsigned)
  int offset;             // subtracted from every stored integer (Q4_0: 8, Q5_0: 16, Q6_K: 32)
  bool has_min;           // an added m per block (Q4_1, Q5_1, Q4_K, Q5_K)
  bool has_sub_scales;    // an integer scale per 16 weights (Q6_K)
  uint32_t block_elements;  // of the stored format: 32, or 256 for the K formats
  uint32_t block_bytes;
};

// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; nullopt for any other type.
std::optional<QuantFormat> quant_format(GgmlType type);

struct QuantBlock32 {
  int8_t q[32];           // stored integers
  float d;                // scale (K formats: the super-block's d times the block's 6-bit scale)
  float m;                // K formats: -(dmin * the block's 6-bit min); 0 where !has_min
  int16_t sub_scale[2];   // Q6_K: the int8 scales of weights 0-15 and 16-31; else 1, 1
};

// Reads num_elements weights of `type` (a multiple of its block_elements; src holds exactly
// their bytes) into num_elements / 32 blocks. `type` must have a quant_format.
void decode_quant_blocks(GgmlType type, const uint8_t* src, std::size_t num_elements, QuantBlock32* out);

// Weight i of `block` as a float.
inline float quant_weight(const QuantFormat& format, const QuantBlock32& block, int i) {
  const float scale = block.d * static_cast<float>(block.sub_scale[i / 16]);
  const float w = scale * static_cast<float>(block.q[i] - format.offset);
  return format.has_min ? w + block.m : w;
}

}  // namespace pagedgen
