// The tokenizer interface: text <-> token ids, special-token ids, and byte-exact decoding.
// Implementations: SentencePiece (sentencepiece_tokenizer.h) and byte-level BPE
// (bpe_tokenizer.h); tokenizer_loader.h builds the right one from a model's files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

struct SpecialTokens {
  std::optional<TokenId> bos;
  std::optional<TokenId> eos;
  std::optional<TokenId> eot;  // end of turn (<|im_end|>, <|eot_id|>, <end_of_turn>, ...)
  std::optional<TokenId> unk;
  std::optional<TokenId> pad;
  bool add_bos = false;  // the model expects BOS before a prompt
  bool add_eos = false;
  std::vector<TokenId> end_of_generation;  // every id that ends a generation (eos, eot, ...)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text to ids. Never adds BOS/EOS. Special-token text such as "<|im_end|>" is matched
  // as one token only when parse_special is true; otherwise it is tokenized as text.
  virtual std::vector<TokenId> encode(std::string_view text, bool parse_special) const = 0;

  // The raw bytes token `id` contributes to decoded text (may be part of a UTF-8
  // character). Control tokens contribute their text only when render_special is true.
  virtual std::string token_bytes(TokenId id, bool render_special) const = 0;

  // The vocabulary entry as stored (for display, e.g. "Ġthe" or "▁the").
  virtual std::string piece(TokenId id) const = 0;

  virtual int32_t vocab_size() const = 0;

  // Ids to text. SentencePiece drops the leading space its encoder added. The result is
  // valid UTF-8: bytes that do not form a character become U+FFFD. Ids outside the
  // vocabulary contribute nothing.
  virtual std::string decode(std::span<const TokenId> ids, bool render_special) const;

  // Whether decode() drops one leading space from the first token that produces text
  // (SentencePiece's dummy prefix). IncrementalDecoder follows the same rule.
  virtual bool decode_strips_leading_space() const { return false; }

  // The id of a special token's exact text ("<|im_end|>"), if the vocabulary has it.
  virtual std::optional<TokenId> find_token(std::string_view text) const = 0;

  const SpecialTokens& special() const { return special_; }
  bool is_end_of_generation(TokenId id) const;

 protected:
  // Fills what the vocabulary implies once special_ holds the configured ids: eot from
  // the usual end-of-turn texts when unset, and end_of_generation = eos, eot and every
  // usual end-of-turn text present (<|im_end|>, <|eot_id|>, <|end|>, ...), deduplicated.
  // Subclass constructors call it last (it uses find_token).
  void complete_special_tokens();

  SpecialTokens special_;
};

// Streams decoded text token by token and never emits part of a UTF-8 character: bytes
// of an unfinished character are held until the token that completes them arrives.
class IncrementalDecoder {
 public:
  // `at_text_start`: the tokens begin a text, so SentencePiece's added leading space is
  // dropped as decode() does; false when they continue a prompt (generation), where that
  // space belongs to the output (" Paris" after "The capital of France is").
  IncrementalDecoder(const Tokenizer& tokenizer, bool render_special, bool at_text_start = true);
  // Appends one token and returns the newly completed text (possibly empty).
  std::string push(TokenId id);
  // Text held back at the end (an incomplete character), as U+FFFD replacement(s).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  bool first_;
  std::string pending_;
};

}  // namespace pagedgen
