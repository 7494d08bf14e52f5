// IEEE binary16 <-> binary32 and bfloat16 <-> binary32 conversions, exact and the same on
// every build (no F16C), for the GGUF scales, the fast path's float16 rounding of activation
// scales and the CPU's float16 / bfloat16 KV cache. The widening ones are host-and-device
// functions: the GPU's dequantization kernels read the same scales the same way.
#pragma once

#include <bit>
#include <cstdint>

#include "util/host_device.h"

namespace pagedgen {

PG_HOST_DEVICE inline float float_from_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

PG_HOST_DEVICE inline uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  return std::bit_cast<uint32_t>(value);
#endif
}

// binary16 -> binary32, exact for every input (NaN payloads kept, as numpy does).
PG_HOST_DEVICE inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return float_from_bits(sign | float_bits(magnitude));
  }
  return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// binary32 -> binary16, rounding to nearest with ties to even (as F16C's vcvtps2ph with
// round-to-nearest does); overflow gives infinity, NaN stays NaN.
inline uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal half, value = m * 2^-24. Adding
    // 0.5 (in float, with its one rounding done in integer arithmetic here) is the rounding.
    const uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;  // under 2^-25: rounds to zero
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24 bits dropped
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even;
  // a carry out of the mantissa correctly bumps the exponent.
  uint32_t half = ((magnitude - 0x38000000u) >> 13);
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// bfloat16 (the top 16 bits of a binary32) -> binary32: exact.
PG_HOST_DEVICE inline float bfloat16_to_float(uint16_t b) { return float_from_bits(static_cast<uint32_t>(b) << 16); }

// binary32 -> bfloat16, rounding to nearest with ties to even; NaN stays NaN (quiet).
inline uint16_t float_to_bfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// The stored forms of a 16-bit value (distinct types, so templates tell them apart), as
// in KV pools (cpu/kv_dtype.h) and float16 / bfloat16 weight matrices.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float to_float(float v) { return v; }
inline float to_float(Float16 v) { return half_to_float(v.bits); }
inline float to_float(BFloat16 v) { return bfloat16_to_float(v.bits); }

// float -> T, rounding to nearest even (the identity for float).
template <typename T>
T from_float(float v);
template <>
inline float from_float<float>(float v) {
  return v;
}
template <>
inline Float16 from_float<Float16>(float v) {
  return {float_to_half(v)};
}
template <>
inline BFloat16 from_float<BFloat16>(float v) {
  return {float_to_bfloat16(v)};
}

}  // namespace pagedgen
