// Id table lookups shared by the SentencePiece and byte-level BPE tokenizers.
#include "tokenizer/vocabulary.h"

#include "util/error.h"

namespace pagedgen {

Vocabulary::Vocabulary(std::vector<std::string> pieces, std::vector<TokenType> types, std::vector<std::string> surfaces,
                       std::vector<AddedToken> added)
    : pieces_(std::move(pieces)), types_(std::move(types)), surfaces_(std::move(surfaces)), added_(std::move(added)) {
  PG_CHECK(types_.size() == pieces_.size() && surfaces_.size() == pieces_.size(),
           "vocabulary tables disagree: {} pieces, {} types, {} surfaces", pieces_.size(), types_.size(),
           surfaces_.size());
  id_by_piece_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    id_by_piece_.emplace(pieces_[id], static_cast<TokenId>(id));
  }
}

std::string Vocabulary::piece(TokenId id) const {
  return contains(id) ? pieces_[static_cast<size_t>(id)] : std::string();
}

std::string Vocabulary::token_bytes(TokenId id, bool render_special) const {
  if (!contains(id)) return {};
  const TokenType token_type = types_[static_cast<size_t>(id)];
  if (token_type == TokenType::Unused) return {};
  if (is_special_type(token_type) && !render_special) return {};
  return surfaces_[static_cast<size_t>(id)];
}

std::optional<TokenId> Vocabulary::find(std::string_view text) const {
  if (const auto id = added_.find(text)) return id;
  return find_piece(text);
}

std::optional<TokenId> Vocabulary::find_piece(std::string_view piece) const {
  const auto it = id_by_piece_.find(std::string(piece));
  if (it == id_by_piece_.end()) return std::nullopt;
  return it->second;
}

namespace {

std::optional<int> hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

}  // namespace

std::optional<uint8_t> byte_piece_value(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return std::nullopt;
  const auto high = hex_digit(piece[3]);
  const auto low = hex_digit(piece[4]);
  if (!high || !low) return std::nullopt;
  return static_cast<uint8_t>(*high * 16 + *low);
}

std::vector<AddedToken> added_tokens_from_types(const std::vector<std::string>& pieces,
                                                const std::vector<TokenType>& types) {
  std::vector<AddedToken> added;
  for (size_t id = 0; id < pieces.size(); ++id) {
    const TokenType token_type = types[id];
    if (is_special_type(token_type) || token_type == TokenType::UserDefined) {
      added.push_back(
          {.text = pieces[id], .id = static_cast<TokenId>(id), .special = token_type != TokenType::UserDefined});
    }
  }
  return added;
}

}  // namespace pagedgen
