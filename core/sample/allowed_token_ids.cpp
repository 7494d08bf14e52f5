#include "sample/allowed_token_ids.h"

#include "grammar/token_bitmask.h"
#include "util/error.h"

namespace pagedgen {

std::vector<uint32_t> allowed_ids_mask(std::span<const TokenId> ids, int32_t vocab_size) {
  std::vector<uint32_t> mask(token_mask_words(vocab_size), 0u);
  for (const TokenId id : ids) {
    PG_CHECK(id >= 0 && id < vocab_size, "allowed token id {} outside a vocabulary of {}", id, vocab_size);
    allow_token(mask, id);
  }
  return mask;
}

void intersect_mask(std::span<uint32_t> mask, std::span<const uint32_t> allowed) {
  PG_CHECK(mask.size() == allowed.size(), "masks of {} and {} words", mask.size(), allowed.size());
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] &= allowed[i];
}

}  // namespace pagedgen
