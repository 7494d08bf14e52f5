// What every tokenizer shares: decoding a sequence, end-of-generation bookkeeping, and
// streaming decode that holds back unfinished UTF-8 characters.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>

#include "tokenizer/utf8.h"

namespace pagedgen {
namespace {

// Texts that end a turn in the chat formats we know; looked up in the vocabulary because
// GGUF files and HF configs rarely list them all (llama.cpp does the same).
constexpr std::array<std::string_view, 10> kEndOfTurnTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<EOT>",
    "<end_of_utterance>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81"
    "of\xE2\x96\x81"
    "sentence\xEF\xBD\x9C>",
};

// The leading space SentencePiece's encoder added, removed from the first piece with text.
void strip_leading_space(std::string& piece) {
  if (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
}

}  // namespace

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  std::string bytes;
  bool strip_space = decode_strips_leading_space();
  for (const TokenId id : ids) {
    std::string piece = token_bytes(id, render_special);
    if (strip_space && !piece.empty()) {
      strip_leading_space(piece);
      strip_space = false;
    }
    bytes += piece;
  }
  return utf8_sanitize(bytes);
}

bool Tokenizer::is_end_of_generation(TokenId id) const {
  const auto& ids = special_.end_of_generation;
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void Tokenizer::complete_special_tokens() {
  if (!special_.eot) {
    // <|eom_id|> ends a message, not a turn: never the eot.
    for (const std::string_view text : kEndOfTurnTexts) {
      if (text == "<|eom_id|>") continue;
      if (const auto id = find_token(text)) {
        special_.eot = id;
        break;
      }
    }
  }
  auto& eog = special_.end_of_generation;
  const auto add = [&eog](std::optional<TokenId> id) {
    if (id && std::find(eog.begin(), eog.end(), *id) == eog.end()) eog.push_back(*id);
  };
  add(special_.eos);
  add(special_.eot);
  for (const std::string_view text : kEndOfTurnTexts) add(find_token(text));
}

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool render_special, bool at_text_start)
    : tokenizer_(tokenizer), render_special_(render_special), first_(at_text_start) {}

std::string IncrementalDecoder::push(TokenId id) {
  std::string piece = tokenizer_.token_bytes(id, render_special_);
  if (first_ && !piece.empty()) {
    if (tokenizer_.decode_strips_leading_space()) strip_leading_space(piece);
    first_ = false;
  }
  pending_ += piece;
  const size_t complete = utf8_complete_prefix(pending_);
  std::string text = utf8_sanitize(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return text;
}

std::string IncrementalDecoder::finish() {
  std::string text = utf8_sanitize(pending_);
  pending_.clear();
  return text;
}

}  // namespace pagedgen
