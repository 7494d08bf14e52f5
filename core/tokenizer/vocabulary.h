// The id table both tokenizers share: each token's stored piece, its type, the bytes it
// contributes to decoded text, and lookups by text. Out-of-range ids read as nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/token_type.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class Vocabulary {
 public:
  Vocabulary() = default;
  // pieces, types and surfaces have one entry per id. `surfaces`: the decoded bytes of
  // each token (SentencePiece "▁" already a space, byte-level BPE already raw bytes).
  // `added`: the tokens matched by text in input (see added_tokens.h).
  Vocabulary(std::vector<std::string> pieces, std::vector<TokenType> types, std::vector<std::string> surfaces,
             std::vector<AddedToken> added);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  bool contains(TokenId id) const { return id >= 0 && id < size(); }
  TokenType type(TokenId id) const { return types_.at(static_cast<size_t>(id)); }
  std::string piece(TokenId id) const;
  // Control and unknown tokens give their text only when render_special is true; unused
  // tokens never give anything.
  std::string token_bytes(TokenId id, bool render_special) const;

  // An added/special token's exact text, else a stored piece ("Ġthe", "▁the").
  std::optional<TokenId> find(std::string_view text) const;
  std::optional<TokenId> find_piece(std::string_view piece) const;

  const AddedTokenMatcher& added_tokens() const { return added_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<TokenType> types_;
  std::vector<std::string> surfaces_;
  AddedTokenMatcher added_;
  std::unordered_map<std::string, TokenId> id_by_piece_;  // first id wins for duplicates
};

// The byte a "<0xAB>" byte piece stands for; nullopt when `piece` is not of that form.
std::optional<uint8_t> byte_piece_value(std::string_view piece);

// The tokens a vocabulary's types say must be matched by text: control and unknown
// (special) and user-defined (always matched).
std::vector<AddedToken> added_tokens_from_types(const std::vector<std::string>& pieces,
                                                const std::vector<TokenType>& types);

}  // namespace pagedgen
