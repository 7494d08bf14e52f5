// Names and block layouts of the ggml tensor types, checked against ggml-common.h's
// block structs (sizeof(block_xxx) and QK_xxx) in llama.cpp.
#include "model/ggml_type.h"

#include <fmt/format.h>

namespace pagedgen {
namespace {

struct TypeEntry {
  std::string_view name;
  GgmlTypeLayout layout;
};

// Indexed by type number; an empty name marks a number ggml never used or retired
// (4 and 5 were Q4_2/Q4_3; 31-33 were the Q4_0_4_4/4_8/8_8 repackings, removed).
constexpr TypeEntry kTypes[] = {
    /*  0 */ {"F32", {1, 4}},
    /*  1 */ {"F16", {1, 2}},
    /*  2 */ {"Q4_0", {32, 18}},  // f16 d, 16 bytes of nibbles
    /*  3 */ {"Q4_1", {32, 20}},  // f16 d, f16 m, 16 bytes of nibbles
    /*  4 */ {"", {0, 0}},
    /*  5 */ {"", {0, 0}},
    /*  6 */ {"Q5_0", {32, 22}},  // f16 d, 4 bytes of high bits, 16 bytes of nibbles
    /*  7 */ {"Q5_1", {32, 24}},  // f16 d, f16 m, 4 bytes of high bits, 16 bytes of nibbles
    /*  8 */ {"Q8_0", {32, 34}},  // f16 d, 32 int8
    /*  9 */ {"Q8_1", {32, 36}},  // f16 d, f16 s, 32 int8 (the gguf Python table's 40 is stale)
    /* 10 */ {"Q2_K", {256, 84}},
    /* 11 */ {"Q3_K", {256, 110}},
    /* 12 */ {"Q4_K", {256, 144}},
    /* 13 */ {"Q5_K", {256, 176}},
    /* 14 */ {"Q6_K", {256, 210}},
    /* 15 */ {"Q8_K", {256, 292}},  // f32 d, 256 int8, 16 int16 sums
    /* 16 */ {"IQ2_XXS", {256, 66}},
    /* 17 */ {"IQ2_XS", {256, 74}},
    /* 18 */ {"IQ3_XXS", {256, 98}},
    /* 19 */ {"IQ1_S", {256, 50}},
    /* 20 */ {"IQ4_NL", {32, 18}},
    /* 21 */ {"IQ3_S", {256, 110}},
    /* 22 */ {"IQ2_S", {256, 82}},
    /* 23 */ {"IQ4_XS", {256, 136}},
    /* 24 */ {"I8", {1, 1}},
    /* 25 */ {"I16", {1, 2}},
    /* 26 */ {"I32", {1, 4}},
    /* 27 */ {"I64", {1, 8}},
    /* 28 */ {"F64", {1, 8}},
    /* 29 */ {"IQ1_M", {256, 56}},
    /* 30 */ {"BF16", {1, 2}},
    /* 31 */ {"", {0, 0}},
    /* 32 */ {"", {0, 0}},
    /* 33 */ {"", {0, 0}},
    /* 34 */ {"TQ1_0", {256, 54}},
    /* 35 */ {"TQ2_0", {256, 66}},
    /* 36 */ {"", {0, 0}},
    /* 37 */ {"", {0, 0}},
    /* 38 */ {"", {0, 0}},
    /* 39 */ {"MXFP4", {32, 17}},  // e8m0 shared exponent, 16 bytes of fp4 nibbles
};

const TypeEntry* find_entry(uint32_t raw_type) {
  if (raw_type >= std::size(kTypes) || kTypes[raw_type].name.empty()) return nullptr;
  return &kTypes[raw_type];
}

}  // namespace

std::optional<GgmlTypeLayout> ggml_type_layout(uint32_t raw_type) {
  const TypeEntry* entry = find_entry(raw_type);
  if (entry == nullptr) return std::nullopt;
  return entry->layout;
}

std::string ggml_type_name(uint32_t raw_type) {
  const TypeEntry* entry = find_entry(raw_type);
  if (entry == nullptr) return fmt::format("unknown type {}", raw_type);
  return std::string(entry->name);
}

}  // namespace pagedgen
