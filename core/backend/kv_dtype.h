// The element type of the CPU backend's KV pools: float32 (the exact path's), float16 or
// bfloat16 (half the memory and half the bytes attention reads). A K or V value is rounded
// once, to nearest even, when it is written, and read back exactly, so attention is the
// same fixed-order float arithmetic on the rounded values: outputs stay the same at every
// block size, with sharing on or off, on every thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/half.h"

namespace pagedgen {

enum class KvDtype { kFloat32, kFloat16, kBFloat16 };

std::size_t kv_dtype_bytes(KvDtype dtype);
// "float32", "float16", "bfloat16"
std::string kv_dtype_name(KvDtype dtype);
std::optional<KvDtype> parse_kv_dtype(std::string_view name);

// The stored forms of a KV value (distinct types, so templates tell them apart).
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float kv_to_float(float v) { return v; }
inline float kv_to_float(Float16 v) { return half_to_float(v.bits); }
inline float kv_to_float(BFloat16 v) { return bfloat16_to_float(v.bits); }

template <typename Kv>
Kv kv_from_float(float v);
template <>
inline float kv_from_float<float>(float v) { return v; }
template <>
inline Float16 kv_from_float<Float16>(float v) { return {float_to_half(v)}; }
template <>
inline BFloat16 kv_from_float<BFloat16>(float v) { return {float_to_bfloat16(v)}; }

}  // namespace pagedgen
