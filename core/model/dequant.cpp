// Block formats to float32, written from the layouts in ggml-common.h. Each type has one
// loop over its blocks (no per-element dispatch) and keeps ggml's order of operations,
// e.g. (d * scale) * q - (dmin * m). Every product is exact in float (an f16 scale has 11
// significant bits, 6-bit scales and quants add at most 13), so each value rounds once at
// most, in the final add: results match ggml bit for bit, with or without FMA contraction.
#include "model/dequant.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "util/error.h"

namespace pagedgen {
namespace {

using Bytes = const uint8_t*;

uint16_t load_u16(Bytes p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32(Bytes p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// IEEE binary16 -> binary32, exact for every input (NaN payloads kept, as numpy does).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
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

// Q8_0, 34 bytes: f16 d | int8 q[32];  x = q * d
void dequant_q8_0(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 34, dst += 32) {
    const float d = load_half(src);
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int i = 0; i < 32; ++i) dst[i] = static_cast<float>(q[i]) * d;
  }
}

// Q4_0, 18 bytes: f16 d | qs[16]; element i < 16 is the low nibble of qs[i], element
// i + 16 its high nibble; x = (nibble - 8) * d
void dequant_q4_0(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 18, dst += 32) {
    const float d = load_half(src);
    Bytes qs = src + 2;
    for (int i = 0; i < 16; ++i) {
      dst[i] = static_cast<float>((qs[i] & 0x0f) - 8) * d;
      dst[i + 16] = static_cast<float>((qs[i] >> 4) - 8) * d;
    }
  }
}

// Q4_1, 20 bytes: f16 d | f16 m | qs[16]; x = nibble * d + m
void dequant_q4_1(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 20, dst += 32) {
    const float d = load_half(src);
    const float m = load_half(src + 2);
    Bytes qs = src + 4;
    for (int i = 0; i < 16; ++i) {
      dst[i] = static_cast<float>(qs[i] & 0x0f) * d + m;
      dst[i + 16] = static_cast<float>(qs[i] >> 4) * d + m;
    }
  }
}

// Q5_0, 22 bytes: f16 d | u32 qh | qs[16]; bit i of qh is bit 4 of element i;
// x = (5-bit value - 16) * d
void dequant_q5_0(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 22, dst += 32) {
    const float d = load_half(src);
    const uint32_t qh = load_u32(src + 2);
    Bytes qs = src + 6;
    for (int i = 0; i < 16; ++i) {
      const int lo = (qs[i] & 0x0f) | static_cast<int>(((qh >> i) & 1u) << 4);
      const int hi = (qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1u) << 4);
      dst[i] = static_cast<float>(lo - 16) * d;
      dst[i + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

// Q5_1, 24 bytes: f16 d | f16 m | u32 qh | qs[16]; x = 5-bit value * d + m
void dequant_q5_1(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 24, dst += 32) {
    const float d = load_half(src);
    const float m = load_half(src + 2);
    const uint32_t qh = load_u32(src + 4);
    Bytes qs = src + 8;
    for (int i = 0; i < 16; ++i) {
      const int lo = (qs[i] & 0x0f) | static_cast<int>(((qh >> i) & 1u) << 4);
      const int hi = (qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1u) << 4);
      dst[i] = static_cast<float>(lo) * d + m;
      dst[i + 16] = static_cast<float>(hi) * d + m;
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

// Q4_K, 144 bytes: f16 d | f16 dmin | scales[12] | qs[128]. Eight sub-blocks of 32;
// sub-blocks 2k and 2k+1 are the low and high nibbles of qs[32k .. 32k+31].
// x = (d * scale) * nibble - (dmin * min)
void dequant_q4_k(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 144, dst += 256) {
    const float d = load_half(src);
    const float dmin = load_half(src + 2);
    uint8_t scale[8], min[8];
    unpack_k_scales(src + 4, scale, min);
    Bytes qs = src + 16;
    for (int k = 0; k < 4; ++k) {
      const float d_lo = d * static_cast<float>(scale[2 * k]);
      const float m_lo = dmin * static_cast<float>(min[2 * k]);
      const float d_hi = d * static_cast<float>(scale[2 * k + 1]);
      const float m_hi = dmin * static_cast<float>(min[2 * k + 1]);
      float* y = dst + 64 * k;
      Bytes q = qs + 32 * k;
      for (int i = 0; i < 32; ++i) {
        y[i] = d_lo * static_cast<float>(q[i] & 0x0f) - m_lo;
        y[i + 32] = d_hi * static_cast<float>(q[i] >> 4) - m_hi;
      }
    }
  }
}

// Q5_K, 176 bytes: f16 d | f16 dmin | scales[12] | qh[32] | qs[128]. As Q4_K, plus bit s
// of qh[i] is bit 4 of element i of sub-block s.
void dequant_q5_k(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 176, dst += 256) {
    const float d = load_half(src);
    const float dmin = load_half(src + 2);
    uint8_t scale[8], min[8];
    unpack_k_scales(src + 4, scale, min);
    Bytes qh = src + 16;
    Bytes qs = src + 48;
    for (int k = 0; k < 4; ++k) {
      const float d_lo = d * static_cast<float>(scale[2 * k]);
      const float m_lo = dmin * static_cast<float>(min[2 * k]);
      const float d_hi = d * static_cast<float>(scale[2 * k + 1]);
      const float m_hi = dmin * static_cast<float>(min[2 * k + 1]);
      const int shift_lo = 2 * k;
      const int shift_hi = 2 * k + 1;
      float* y = dst + 64 * k;
      Bytes q = qs + 32 * k;
      for (int i = 0; i < 32; ++i) {
        const int lo = (q[i] & 0x0f) | (((qh[i] >> shift_lo) & 1) << 4);
        const int hi = (q[i] >> 4) | (((qh[i] >> shift_hi) & 1) << 4);
        y[i] = d_lo * static_cast<float>(lo) - m_lo;
        y[i + 32] = d_hi * static_cast<float>(hi) - m_hi;
      }
    }
  }
}

// Q6_K, 210 bytes: ql[128] | qh[64] | int8 scales[16] | f16 d. Two halves of 128; in half
// h, element 32r + i (r = 0..3, i = 0..31) takes its low 4 bits from ql[64h + i + 32(r&1)]
// (low nibble for r < 2, high for r >= 2) and its top 2 bits from qh[32h + i] >> 2r.
// x = (d * scales[e / 16]) * (6-bit value - 32)
void dequant_q6_k(Bytes src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 210, dst += 256) {
    Bytes ql = src;
    Bytes qh = src + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_half(src + 208);
    for (int half = 0; half < 2; ++half) {
      float* y = dst + 128 * half;
      Bytes l = ql + 64 * half;
      Bytes h = qh + 32 * half;
      const int8_t* sc = scales + 8 * half;
      for (int i = 0; i < 32; ++i) {
        const int s = i / 16;
        const int q0 = ((l[i] & 0x0f) | (((h[i] >> 0) & 3) << 4)) - 32;
        const int q1 = ((l[i + 32] & 0x0f) | (((h[i] >> 2) & 3) << 4)) - 32;
        const int q2 = ((l[i] >> 4) | (((h[i] >> 4) & 3) << 4)) - 32;
        const int q3 = ((l[i + 32] >> 4) | (((h[i] >> 6) & 3) << 4)) - 32;
        y[i] = d * static_cast<float>(sc[s]) * static_cast<float>(q0);
        y[i + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q1);
        y[i + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q2);
        y[i + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q3);
      }
    }
  }
}

}  // namespace

bool can_dequantize(GgmlType type) {
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> dst) {
  if (!can_dequantize(type)) {
    fail("cannot dequantize tensor type {}: pagedgen supports F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
         "Q5_0, Q5_1, Q4_K, Q5_K and Q6_K; use a model quantized to one of those",
         ggml_type_name(type));
  }
  const std::optional<GgmlTypeLayout> layout = ggml_type_layout(static_cast<uint32_t>(type));
  PG_CHECK(layout.has_value(), "type {} has no layout", ggml_type_name(type));
  PG_CHECK(dst.size() % layout->block_elements == 0, "{} elements of {} are not whole blocks",
           dst.size(), ggml_type_name(type));
  const std::size_t num_blocks = dst.size() / layout->block_elements;
  PG_CHECK(src.size() == num_blocks * layout->block_bytes,
           "{} bytes given for {} blocks of {} ({} bytes each)", src.size(), num_blocks,
           ggml_type_name(type), layout->block_bytes);
  const auto* in = reinterpret_cast<Bytes>(src.data());
  float* out = dst.data();
  switch (type) {
    case GgmlType::F32: dequant_f32(in, out, num_blocks); break;
    case GgmlType::F16: dequant_f16(in, out, num_blocks); break;
    case GgmlType::BF16: dequant_bf16(in, out, num_blocks); break;
    case GgmlType::Q8_0: dequant_q8_0(in, out, num_blocks); break;
    case GgmlType::Q4_0: dequant_q4_0(in, out, num_blocks); break;
    case GgmlType::Q4_1: dequant_q4_1(in, out, num_blocks); break;
    case GgmlType::Q5_0: dequant_q5_0(in, out, num_blocks); break;
    case GgmlType::Q5_1: dequant_q5_1(in, out, num_blocks); break;
    case GgmlType::Q4_K: dequant_q4_k(in, out, num_blocks); break;
    case GgmlType::Q5_K: dequant_q5_k(in, out, num_blocks); break;
    case GgmlType::Q6_K: dequant_q6_k(in, out, num_blocks); break;
    default: PG_CHECK(false, "can_dequantize and dequantize disagree on {}", ggml_type_name(type));
  }
}

}  // namespace pagedgen
