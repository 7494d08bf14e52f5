// The ggml tensor types that GGUF files name by number: their names and block layouts.
// Layouts are known for every type (so any GGUF can be listed); which ones pagedgen can
// turn into floats is dequant.h's business.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pagedgen {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct GgmlTypeLayout {
  uint32_t block_elements;  // elements per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

// Layout of a raw type number; nullopt when the number is not a ggml type.
std::optional<GgmlTypeLayout> ggml_type_layout(uint32_t raw_type);

// "Q4_1", "BF16", ... or "unknown type 99".
std::string ggml_type_name(uint32_t raw_type);
inline std::string ggml_type_name(GgmlType type) { return ggml_type_name(static_cast<uint32_t>(type)); }

}  // namespace pagedgen
