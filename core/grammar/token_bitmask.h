// The layout of a token mask, as the samplers will read it: one bit per vocabulary id,
// bit (id % 32) of word id / 32 set when the token is allowed (the layout vLLM and
// xgrammar use, so a device kernel reads 32 tokens per load).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "step/ids.h"

namespace pagedgen {

inline size_t token_mask_words(int32_t vocab_size) { return (static_cast<size_t>(vocab_size) + 31) / 32; }

inline void allow_token(std::span<uint32_t> mask_words, TokenId id) {
  mask_words[static_cast<size_t>(id) / 32] |= uint32_t{1} << (static_cast<uint32_t>(id) % 32);
}

inline bool token_allowed(std::span<const uint32_t> mask_words, TokenId id) {
  return (mask_words[static_cast<size_t>(id) / 32] >> (static_cast<uint32_t>(id) % 32)) & 1u;
}

}  // namespace pagedgen
