// Special and added tokens found by their exact text in input (before any model runs):
// "<|im_start|>" becomes one id instead of being spelled out. Control/unknown tokens are
// matched only when the caller parses special tokens; user-defined tokens always are
// (llama.cpp and HF tokenizers agree on that).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagedgen {

struct AddedToken {
  std::string text;
  TokenId id = 0;
  bool special = true;  // matched only with parse_special (control); else always (user-defined)
  bool lstrip = false;  // swallows the whitespace before it (HF AddedToken.lstrip)
  bool rstrip = false;  // swallows the whitespace after it
};

// A piece of input: plain text to run through the model, or one matched token.
struct TextFragment {
  std::string_view text;
  std::optional<TokenId> token;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // Tokens with empty text are ignored; for duplicate texts the first one wins.
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // Splits `text` at every matched token, scanning left to right and taking the longest
  // token that matches at each position. Fragments view `text`; no fragment is empty.
  std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

  std::optional<TokenId> find(std::string_view text) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;                        // longest text first
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_
  std::unordered_map<std::string, TokenId> id_by_text_;
};

}  // namespace pagedgen
