// The quantized ggml formats read as integers and scales, 32 weights at a time: the one
// place that knows their bit layouts. Dequantization (dequant.h) turns a block into floats;
// the CPU's fast path (backend/packed_matrix.h) keeps the integers and multiplies them
// with quantized activations; the GPU's dequantization kernels (gpu/dequant_kernels.h) call
// the same host-and-device functions below on the file's bytes.
//
// Weight i of a block is   (d * sub_scale[i / 16]) * (q[i] - offset)  [+ m when has_min]
// with every product exact in float, so that is also ggml's value, bit for bit (with or
// without a fused multiply-add: the product rounds nothing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "model/ggml_type.h"
#include "util/half.h"
#include "util/host_device.h"

namespace pagedgen {

struct QuantFormat {
  int bits;                 // of a stored integer: 4, 5, 6 or 8 (8: signed, the others unsigned)
  int offset;               // subtracted from every stored integer (Q4_0: 8, Q5_0: 16, Q6_K: 32)
  bool has_min;             // an added m per block (Q4_1, Q5_1, Q4_K, Q5_K)
  bool has_sub_scales;      // an integer scale per 16 weights (Q6_K)
  uint32_t block_elements;  // of the stored format: 32, or 256 for the K formats
  uint32_t block_bytes;
};

// The constants of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; all zero for any other type.
PG_HOST_DEVICE constexpr QuantFormat quant_format_or_zero(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
      return QuantFormat{8, 0, false, false, 32, 34};
    case GgmlType::Q4_0:
      return QuantFormat{4, 8, false, false, 32, 18};
    case GgmlType::Q4_1:
      return QuantFormat{4, 0, true, false, 32, 20};
    case GgmlType::Q5_0:
      return QuantFormat{5, 16, false, false, 32, 22};
    case GgmlType::Q5_1:
      return QuantFormat{5, 0, true, false, 32, 24};
    case GgmlType::Q4_K:
      return QuantFormat{4, 0, true, false, 256, 144};
    case GgmlType::Q5_K:
      return QuantFormat{5, 0, true, false, 256, 176};
    case GgmlType::Q6_K:
      return QuantFormat{6, 32, false, true, 256, 210};
    default:
      return QuantFormat{0, 0, false, false, 0, 0};
  }
}

// The same, nullopt for a type that is not one of them.
std::optional<QuantFormat> quant_format(GgmlType type);

struct QuantBlock32 {
  int8_t q[32];          // stored integers
  float d;               // scale (K formats: the super-block's d times the block's 6-bit scale)
  float m;               // K formats: -(dmin * the block's 6-bit min); 0 where !has_min
  int16_t sub_scale[2];  // Q6_K: the int8 scales of weights 0-15 and 16-31; else 1, 1
};

// Reads num_elements weights of `type` (a multiple of its block_elements; src holds exactly
// their bytes) into num_elements / 32 blocks. `type` must have a quant_format.
void decode_quant_blocks(GgmlType type, const uint8_t* src, std::size_t num_elements, QuantBlock32* out);

// Weight i of `block` as a float.
PG_HOST_DEVICE inline float quant_weight(const QuantFormat& format, const QuantBlock32& block, int i) {
  const float scale = block.d * static_cast<float>(block.sub_scale[i / 16]);
  const float w = scale * static_cast<float>(block.q[i] - format.offset);
  return format.has_min ? w + block.m : w;
}

namespace quant_detail {

PG_HOST_DEVICE inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

PG_HOST_DEVICE inline float load_half(const uint8_t* p) {
  return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// A plain block: scale d, no min, no sub-scales (the caller sets m when there is one).
PG_HOST_DEVICE inline QuantBlock32 plain_block(float d) {
  QuantBlock32 block{};
  block.d = d;
  block.sub_scale[0] = block.sub_scale[1] = 1;
  return block;
}

// Q8_0, 34 bytes: f16 d | int8 q[32]
PG_HOST_DEVICE inline QuantBlock32 decode_q8_0(const uint8_t* src) {
  QuantBlock32 out = plain_block(load_half(src));
  for (int i = 0; i < 32; ++i) out.q[i] = static_cast<int8_t>(src[2 + i]);
  return out;
}

// Q4_0 (18 bytes: f16 d | qs[16]) and Q4_1 (20 bytes: f16 d | f16 m | qs[16]): element
// i < 16 is the low nibble of qs[i], element i + 16 its high nibble.
PG_HOST_DEVICE inline QuantBlock32 decode_q4(const uint8_t* src, bool has_min) {
  QuantBlock32 out = plain_block(load_half(src));
  if (has_min) out.m = load_half(src + 2);
  const uint8_t* qs = src + (has_min ? 4 : 2);
  for (int i = 0; i < 16; ++i) {
    out.q[i] = static_cast<int8_t>(qs[i] & 0x0f);
    out.q[i + 16] = static_cast<int8_t>(qs[i] >> 4);
  }
  return out;
}

// Q5_0 (22 bytes: f16 d | u32 qh | qs[16]) and Q5_1 (24 bytes: f16 d | f16 m | u32 qh |
// qs[16]): as Q4, plus bit i of qh is bit 4 of element i.
PG_HOST_DEVICE inline QuantBlock32 decode_q5(const uint8_t* src, bool has_min) {
  QuantBlock32 out = plain_block(load_half(src));
  if (has_min) out.m = load_half(src + 2);
  const uint32_t qh = load_u32(src + (has_min ? 4 : 2));
  const uint8_t* qs = src + (has_min ? 8 : 6);
  for (int i = 0; i < 16; ++i) {
    out.q[i] = static_cast<int8_t>((qs[i] & 0x0f) | (((qh >> i) & 1u) << 4));
    out.q[i + 16] = static_cast<int8_t>((qs[i] >> 4) | (((qh >> (i + 16)) & 1u) << 4));
  }
  return out;
}

// Q4_K (144 bytes: f16 d | f16 dmin | scales[12] | qs[128]) and Q5_K (176 bytes: f16 d |
// f16 dmin | scales[12] | qh[32] | qs[128]), sub-block j of 8. The 12 scale bytes hold eight
// 6-bit scales and eight 6-bit mins:
//   bytes 0-3:  scale j (low 6 bits), top 2 bits = high bits of scale j+4
//   bytes 4-7:  min j   (low 6 bits), top 2 bits = high bits of min j+4
//   bytes 8-11: low nibble = low 4 bits of scale j+4, high nibble = low 4 bits of min j+4
// Sub-blocks 2k and 2k+1 are the low and high nibbles of qs[32k .. 32k+31]; in Q5_K bit j
// of qh[i] is bit 4 of element i of sub-block j. Weight = (d * scale) * q - (dmin * min).
PG_HOST_DEVICE inline QuantBlock32 decode_k(const uint8_t* src, int j, bool five_bits) {
  const float d = load_half(src);
  const float dmin = load_half(src + 2);
  const uint8_t* s = src + 4;
  const int scale = j < 4 ? s[j] & 0x3f : (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
  const int min = j < 4 ? s[j + 4] & 0x3f : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  QuantBlock32 out = plain_block(d * static_cast<float>(scale));
  out.m = -(dmin * static_cast<float>(min));
  const uint8_t* qh = src + 16;
  const uint8_t* q = src + (five_bits ? 48 : 16) + 32 * (j / 2);
  const int shift = (j % 2) * 4;
  for (int i = 0; i < 32; ++i) {
    int value = (q[i] >> shift) & 0x0f;
    if (five_bits) value |= ((qh[i] >> j) & 1) << 4;
    out.q[i] = static_cast<int8_t>(value);
  }
  return out;
}

// Q6_K, 210 bytes: ql[128] | qh[64] | int8 scales[16] | f16 d, sub-block j of 8. Two halves
// of 128; in half h, element 32r + i (r = 0..3, i = 0..31) takes its low 4 bits from
// ql[64h + i + 32(r&1)] (low nibble for r < 2, high for r >= 2) and its top 2 bits from
// qh[32h + i] >> 2r. Weight e = (d * scales[e / 16]) * (q - 32).
PG_HOST_DEVICE inline QuantBlock32 decode_q6_k(const uint8_t* src, int j) {
  const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
  const int half = j / 4;
  const int r = j % 4;
  QuantBlock32 out = plain_block(load_half(src + 208));
  out.sub_scale[0] = scales[2 * j];
  out.sub_scale[1] = scales[2 * j + 1];
  const uint8_t* l = src + 64 * half + 32 * (r & 1);
  const uint8_t* h = src + 128 + 32 * half;
  for (int i = 0; i < 32; ++i) {
    const int low = r < 2 ? (l[i] & 0x0f) : (l[i] >> 4);
    out.q[i] = static_cast<int8_t>(low | (((h[i] >> (2 * r)) & 3) << 4));
  }
  return out;
}

}  // namespace quant_detail

// Sub-block j (weights 32j .. 32j+31) of the stored block at `block` of a quantized type
// (j = 0 for the 32-weight formats, 0..7 for the K formats). `type` must have a quant_format.
PG_HOST_DEVICE inline QuantBlock32 decode_quant_block32(GgmlType type, const uint8_t* block, int j) {
  switch (type) {
    case GgmlType::Q8_0:
      return quant_detail::decode_q8_0(block);
    case GgmlType::Q4_0:
      return quant_detail::decode_q4(block, false);
    case GgmlType::Q4_1:
      return quant_detail::decode_q4(block, true);
    case GgmlType::Q5_0:
      return quant_detail::decode_q5(block, false);
    case GgmlType::Q5_1:
      return quant_detail::decode_q5(block, true);
    case GgmlType::Q4_K:
      return quant_detail::decode_k(block, j, false);
    case GgmlType::Q5_K:
      return quant_detail::decode_k(block, j, true);
    case GgmlType::Q6_K:
      return quant_detail::decode_q6_k(block, j);
    default:
      return quant_detail::plain_block(0.0f);
  }
}

}  // namespace pagedgen
