// Test helper: random stored tensors of each type dequantize() reads, with finite scales of
// a realistic size (so every value is finite and the float16 rounding never overflows),
// for the chunked conversion tests and the GPU dequantization kernels' tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "model/ggml_type.h"

namespace pagedgen::test {

inline const GgmlType kConvertibleTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                             GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                             GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// num_blocks stored blocks of `type`: random bits, with every float field finite.
inline std::vector<std::byte> random_blocks(GgmlType type, std::size_t num_blocks, uint32_t seed) {
  const GgmlTypeLayout layout = *ggml_type_layout(static_cast<uint32_t>(type));
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(num_blocks * layout.block_bytes);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  auto put16 = [&](std::size_t at, uint16_t v) {
    bytes[at] = static_cast<std::byte>(v & 0xff);
    bytes[at + 1] = static_cast<std::byte>(v >> 8);
  };
  // A float16 scale in [2^-7, 2) with either sign.
  auto scale = [&] { return static_cast<uint16_t>((rng() & 0x8000u) | (0x2000u + rng() % 0x1c00u)); };
  for (std::size_t b = 0; b < num_blocks; ++b) {
    const std::size_t at = b * layout.block_bytes;
    switch (type) {
      case GgmlType::F32: {  // the top exponent bit cleared: |value| < 2, finite
        const uint32_t bits = static_cast<uint32_t>(rng()) & 0xbfffffffu;
        for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::byte>((bits >> (8 * i)) & 0xff);
        break;
      }
      // The top exponent bit cleared, as for F32.
      case GgmlType::F16:
      case GgmlType::BF16:
        put16(at, static_cast<uint16_t>(rng() & 0xbfffu));
        break;
      case GgmlType::Q8_0:
      case GgmlType::Q4_0:
      case GgmlType::Q5_0:
        put16(at, scale());
        break;
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
      case GgmlType::Q4_K:
      case GgmlType::Q5_K:
        put16(at, scale());
        put16(at + 2, scale());
        break;
      case GgmlType::Q6_K:
        put16(at + 208, scale());
        break;
      default:
        break;
    }
  }
  return bytes;
}

}  // namespace pagedgen::test
