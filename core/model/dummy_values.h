// The values of dummy (random) weights: element `index` of dummy tensor `tensor_id` is a
// pure function of (seed, tensor_id, index), so the CPU fills its float32 tensors and the
// CUDA backend fills device tensors in place with the same numbers, in any order.
#pragma once

#include <cstdint>

#include "util/host_device.h"

namespace pagedgen {

// splitmix64's finaliser: a 64-bit mix with every input bit reaching every output bit.
PG_HOST_DEVICE constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-scale, scale): 24 random bits, so every value is exact in float.
PG_HOST_DEVICE constexpr float dummy_value(uint64_t seed, uint32_t tensor_id, uint64_t index, float scale) {
  const uint64_t bits = mix64(mix64(seed ^ (uint64_t{tensor_id} << 40)) + index);
  const float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return (2.0f * unit - 1.0f) * scale;
}

}  // namespace pagedgen
