// Vocabulary entry kinds shared by both tokenizers. The numbers are GGUF's
// tokenizer.ggml.token_type values, which are also SentencePiece's piece types.
#pragma once

#include <cstdint>
#include <optional>

namespace pagedgen {

enum class TokenType : uint8_t {
  Normal = 1,       // ordinary text
  Unknown = 2,      // <unk>
  Control = 3,      // <s>, <|im_end|>: text only when special tokens are parsed/rendered
  UserDefined = 4,  // always matched as one token in input text, rendered as its text
  Unused = 5,       // reserved slot, never produced
  Byte = 6,         // <0xAB>: one raw byte (SentencePiece byte fallback)
};

// GGUF/SentencePiece number -> TokenType; nullopt for 0 (undefined) or anything unknown.
inline std::optional<TokenType> token_type_from_number(int64_t number) {
  if (number < 1 || number > 6) return std::nullopt;
  return static_cast<TokenType>(number);
}

// Tokens whose text the special-token matcher looks for in input (see added_tokens.h).
inline bool is_special_type(TokenType type) { return type == TokenType::Control || type == TokenType::Unknown; }

}  // namespace pagedgen
