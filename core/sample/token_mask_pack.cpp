#include "sample/token_mask_pack.h"

#include "grammar/token_bitmask.h"
#include "util/error.h"

namespace pagedgen {

void TokenMaskPack::clear(int32_t vocab) {
  PG_CHECK(vocab >= 1, "a token mask pack for {} ids", vocab);
  words_per_row_ = token_mask_words(vocab);
  num_rows_ = 0;
  words_.clear();
}

std::optional<int32_t> TokenMaskPack::add(std::span<const uint32_t> allowed_tokens) {
  if (allowed_tokens.empty()) return std::nullopt;
  PG_CHECK(words_per_row_ > 0, "a token mask added before clear()");
  PG_CHECK(allowed_tokens.size() <= words_per_row_, "a mask of {} words for logits of {} words", allowed_tokens.size(),
           words_per_row_);
  words_.insert(words_.end(), allowed_tokens.begin(), allowed_tokens.end());
  words_.resize(words_.size() + (words_per_row_ - allowed_tokens.size()), 0u);
  return num_rows_++;
}

std::span<const uint32_t> TokenMaskPack::row(int32_t mask_row) const {
  PG_CHECK(mask_row >= 0 && mask_row < num_rows_, "mask row {} of {}", mask_row, num_rows_);
  return std::span<const uint32_t>(words_).subspan(static_cast<std::size_t>(mask_row) * words_per_row_, words_per_row_);
}

}  // namespace pagedgen
