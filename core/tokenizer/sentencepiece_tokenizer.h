// SentencePiece tokenizer (Llama 1/2, Mistral, Phi-3, ...) on top of libsentencepiece.
// Special and user-defined tokens are split out first (added_tokens.h), then each text
// fragment is encoded by the library, which adds the dummy-prefix space to each fragment
// (as llama.cpp does after every special token).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace pagedgen {

struct SpmConfig {
  std::string serialized_model;  // ModelProto bytes for libsentencepiece
  // The id table: the model's pieces, possibly followed by HF added tokens that the
  // library never produces (matched by text instead).
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  bool add_dummy_prefix = true;  // decode() then drops the leading space
  std::vector<AddedToken> added_tokens;
  SpecialTokens special;
  std::string source;  // where the vocabulary came from, for messages
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Throws Error (naming config.source) when libsentencepiece rejects the model.
  explicit SentencePieceTokenizer(SpmConfig config);
  ~SentencePieceTokenizer() override;

  std::vector<TokenId> encode(std::string_view text, bool parse_special) const override;
  std::string token_bytes(TokenId id, bool render_special) const override;
  std::string piece(TokenId id) const override { return vocab_.piece(id); }
  int32_t vocab_size() const override { return vocab_.size(); }
  std::optional<TokenId> find_token(std::string_view text) const override { return vocab_.find(text); }
  bool decode_strips_leading_space() const override { return add_dummy_prefix_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  Vocabulary vocab_;
  bool add_dummy_prefix_;
  std::string source_;
};

// The bytes a SentencePiece piece stands for: "▁" -> " ", "<0x0A>" -> "\n" for byte
// pieces, anything else as stored.
std::string spm_piece_surface(std::string_view piece, TokenType type);

}  // namespace pagedgen
