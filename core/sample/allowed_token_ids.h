// allowed_token_ids as a token mask (grammar/token_bitmask.h's layout), the form in which
// both samplers already take a grammar's mask: the engine gives a sample the request's
// mask, or its grammar's mask intersected with it, so the CPU and device samplers apply
// it alike and a grammar with it allows only what both allow (vLLM's order: each sets the
// logits outside it to -inf).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

// [token_mask_words(vocab_size)] the bits of `ids` (each in [0, vocab_size)) set.
std::vector<uint32_t> allowed_ids_mask(std::span<const TokenId> ids, int32_t vocab_size);

// mask &= allowed, word by word (both of one vocabulary's size).
void intersect_mask(std::span<uint32_t> mask, std::span<const uint32_t> allowed);

}  // namespace pagedgen
