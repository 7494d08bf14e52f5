// Bit layouts written from ggml-common.h's block definitions.
#include "model/quant_blocks.h"

#include "util/error.h"
#include "util/half.h"

namespace pagedgen {

namespace {

using Bytes = const uint8_t*;

uint32_t load_u32(Bytes p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

float load_half(Bytes p) { return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// A plain block: scale d, no min, no sub-scales (the caller sets m when there is one).
QuantBlock32 plain_block(float d) {
  QuantBlock32 block{};
  block.d = d;
  block.sub_scale[0] = block.sub_scale[1] = 1;
  return block;
}

// Q8_0, 34 bytes: f16 d | int8 q[32]
void decode_q8_0(Bytes src, QuantBlock32* out, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 34) {
    out[b] = plain_block(load_half(src));
    for (int i = 0; i < 32; ++i) out[b].q[i] = static_cast<int8_t>(src[2 + i]);
  }
}

// Q4_0 (18 bytes: f16 d | qs[16]) and Q4_1 (20 bytes: f16 d | f16 m | qs[16]): element
// i < 16 is the low nibble of qs[i], element i + 16 its high nibble.
void decode_q4(Bytes src, QuantBlock32* out, std::size_t num_blocks, bool has_min) {
  const std::size_t stride = has_min ? 20 : 18;
  for (std::size_t b = 0; b < num_blocks; ++b, src += stride) {
    out[b] = plain_block(load_half(src));
    if (has_min) out[b].m = load_half(src + 2);
    Bytes qs = src + (has_min ? 4 : 2);
    for (int i = 0; i < 16; ++i) {
      out[b].q[i] = static_cast<int8_t>(qs[i] & 0x0f);
      out[b].q[i + 16] = static_cast<int8_t>(qs[i] >> 4);
    }
  }
}

// Q5_0 (22 bytes: f16 d | u32 qh | qs[16]) and Q5_1 (24 bytes: f16 d | f16 m | u32 qh |
// qs[16]): as Q4, plus bit i of qh is bit 4 of element i.
void decode_q5(Bytes src, QuantBlock32* out, std::size_t num_blocks, bool has_min) {
  const std::size_t stride = has_min ? 24 : 22;
  for (std::size_t b = 0; b < num_blocks; ++b, src += stride) {
    out[b] = plain_block(load_half(src));
    if (has_min) out[b].m = load_half(src + 2);
    const uint32_t qh = load_u32(src + (has_min ? 4 : 2));
    Bytes qs = src + (has_min ? 8 : 6);
    for (int i = 0; i < 16; ++i) {
      out[b].q[i] = static_cast<int8_t>((qs[i] & 0x0f) | (((qh >> i) & 1u) << 4));
      out[b].q[i + 16] = static_cast<int8_t>((qs[i] >> 4) | (((qh >> (i + 16)) & 1u) << 4));
    }
  }
}

// The 12 scale bytes of Q4_K/Q5_K hold eight 6-bit scales and eight 6-bit mins:
//   bytes 0-3:  scale j (low 6 bits), top 2 bits = high bits of scale j+4
//   bytes 4-7:  min j   (low 6 bits), top 2 bits = high bits of min j+4
//   bytes 8-11: low nibble = low 4 bits of scale j+4, high nibble = low 4 bits of min j+4
void unpack_k_scales(Bytes s, uint8_t scale[8], uint8_t min[8]) {
  for (int j = 0; j < 4; ++j) {
    scale[j] = s[j] & 0x3f;
    min[j] = s[j + 4] & 0x3f;
    scale[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0f) | ((s[j] >> 6) << 4));
    min[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

// Q4_K (144 bytes: f16 d | f16 dmin | scales[12] | qs[128]) and Q5_K (176 bytes: f16 d |
// f16 dmin | scales[12] | qh[32] | qs[128]). Eight blocks of 32; blocks 2k and 2k+1 are the
// low and high nibbles of qs[32k .. 32k+31]; in Q5_K bit s of qh[i] is bit 4 of element i
// of block s. Weight = (d * scale) * q - (dmin * min).
void decode_k(Bytes src, QuantBlock32* out, std::size_t num_super_blocks, bool five_bits) {
  const std::size_t stride = five_bits ? 176 : 144;
  for (std::size_t b = 0; b < num_super_blocks; ++b, src += stride, out += 8) {
    const float d = load_half(src);
    const float dmin = load_half(src + 2);
    uint8_t scale[8], min[8];
    unpack_k_scales(src + 4, scale, min);
    Bytes qh = src + 16;
    Bytes qs = src + (five_bits ? 48 : 16);
    for (int j = 0; j < 8; ++j) {
      out[j] = plain_block(d * static_cast<float>(scale[j]));
      out[j].m = -(dmin * static_cast<float>(min[j]));
      Bytes q = qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      for (int i = 0; i < 32; ++i) {
        int value = (q[i] >> shift) & 0x0f;
        if (five_bits) value |= ((qh[i] >> j) & 1) << 4;
        out[j].q[i] = static_cast<int8_t>(value);
      }
    }
  }
}

// Q6_K, 210 bytes: ql[128] | qh[64] | int8 scales[16] | f16 d. Two halves of 128; in half
// h, element 32r + i (r = 0..3, i = 0..31) takes its low 4 bits from ql[64h + i + 32(r&1)]
// (low nibble for r < 2, high for r >= 2) and its top 2 bits from qh[32h + i] >> 2r.
// Weight e = (d * scales[e / 16]) * (q - 32).
void decode_q6_k(Bytes src, QuantBlock32* out, std::size_t num_super_blocks) {
  for (std::size_t b = 0; b < num_super_blocks; ++b, src += 210, out += 8) {
    Bytes ql = src;
    Bytes qh = src + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_half(src + 208);
    for (int j = 0; j < 8; ++j) {
      const int half = j / 4;
      const int r = j % 4;
      out[j] = plain_block(d);
      out[j].sub_scale[0] = scales[2 * j];
      out[j].sub_scale[1] = scales[2 * j + 1];
      Bytes l = ql + 64 * half + 32 * (r & 1);
      Bytes h = qh + 32 * half;
      for (int i = 0; i < 32; ++i) {
        const int low = r < 2 ? (l[i] & 0x0f) : (l[i] >> 4);
        out[j].q[i] = static_cast<int8_t>(low | (((h[i] >> (2 * r)) & 3) << 4));
      }
    }
  }
}

}  // namespace

std::optional<QuantFormat> quant_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return QuantFormat{8, 0, false, false, 32, 34};
    case GgmlType::Q4_0: return QuantFormat{4, 8, false, false, 32, 18};
    case GgmlType::Q4_1: return QuantFormat{4, 0, true, false, 32, 20};
    case GgmlType::Q5_0: return QuantFormat{5, 16, false, false, 32, 22};
    case GgmlType::Q5_1: return QuantFormat{5, 0, true, false, 32, 24};
    case GgmlType::Q4_K: return QuantFormat{4, 0, true, false, 256, 144};
    case GgmlType::Q5_K: return QuantFormat{5, 0, true, false, 256, 176};
    case GgmlType::Q6_K: return QuantFormat{6, 32, false, true, 256, 210};
    default: return std::nullopt;
  }
}

void decode_quant_blocks(GgmlType type, const uint8_t* src, std::size_t num_elements, QuantBlock32* out) {
  const std::optional<QuantFormat> format = quant_format(type);
  PG_CHECK(format.has_value(), "{} is not a quantized block format", ggml_type_name(type));
  PG_CHECK(num_elements % format->block_elements == 0, "{} elements of {} are not whole blocks", num_elements,
           ggml_type_name(type));
  const std::size_t num_blocks = num_elements / format->block_elements;
  switch (type) {
    case GgmlType::Q8_0: decode_q8_0(src, out, num_blocks); break;
    case GgmlType::Q4_0: decode_q4(src, out, num_blocks, false); break;
    case GgmlType::Q4_1: decode_q4(src, out, num_blocks, true); break;
    case GgmlType::Q5_0: decode_q5(src, out, num_blocks, false); break;
    case GgmlType::Q5_1: decode_q5(src, out, num_blocks, true); break;
    case GgmlType::Q4_K: decode_k(src, out, num_blocks, false); break;
    case GgmlType::Q5_K: decode_k(src, out, num_blocks, true); break;
    case GgmlType::Q6_K: decode_q6_k(src, out, num_blocks); break;
    default: break;
  }
}

}  // namespace pagedgen
