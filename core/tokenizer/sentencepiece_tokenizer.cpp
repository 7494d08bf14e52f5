// SentencePiece encoding through libsentencepiece; decoding from our own id table.
#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 "▁"

}  // namespace

std::string spm_piece_surface(std::string_view piece, TokenType type) {
  if (type == TokenType::Byte) {
    if (const auto byte = byte_piece_value(piece)) return std::string(1, static_cast<char>(*byte));
    return std::string(piece);
  }
  if (type != TokenType::Normal) return std::string(piece);
  std::string surface;
  surface.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.substr(pos).starts_with(kSpaceMarker)) {
      surface.push_back(' ');
      pos += kSpaceMarker.size();
    } else {
      surface.push_back(piece[pos++]);
    }
  }
  return surface;
}

SentencePieceTokenizer::SentencePieceTokenizer(SpmConfig config)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()),
      add_dummy_prefix_(config.add_dummy_prefix),
      source_(std::move(config.source)) {
  // libsentencepiece reports most bad vocabularies in its status, but throws for some (its
  // trie builder refuses an empty piece with an exception): both become this one Error.
  sentencepiece::util::Status status;
  try {
    status = processor_->LoadFromSerializedProto(config.serialized_model);
  } catch (const std::exception& e) {
    fail(
        "{}: libsentencepiece rejected the vocabulary: {}; the tokenizer data is inconsistent (re-convert "
        "the model or report the file)",
        source_, e.what());
  }
  if (!status.ok()) {
    fail(
        "{}: libsentencepiece rejected the vocabulary: {}; the tokenizer data is "
        "inconsistent (re-convert the model or report the file)",
        source_, status.ToString());
  }
  PG_CHECK(static_cast<size_t>(processor_->GetPieceSize()) <= config.pieces.size(),
           "id table has {} entries, the SentencePiece model {}", config.pieces.size(), processor_->GetPieceSize());
  std::vector<std::string> surfaces;
  surfaces.reserve(config.pieces.size());
  for (size_t id = 0; id < config.pieces.size(); ++id) {
    surfaces.push_back(spm_piece_surface(config.pieces[id], config.types[id]));
  }
  vocab_ = Vocabulary(std::move(config.pieces), std::move(config.types), std::move(surfaces),
                      std::move(config.added_tokens));
  special_ = std::move(config.special);
  complete_special_tokens();
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<TokenId> SentencePieceTokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_sanitize(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  std::vector<int> fragment_ids;
  for (const TextFragment& fragment : vocab_.added_tokens().split(text, parse_special)) {
    if (fragment.token) {
      ids.push_back(*fragment.token);
      continue;
    }
    const auto status = processor_->Encode(fragment.text, &fragment_ids);
    if (!status.ok()) {
      fail("{}: libsentencepiece could not encode a {}-byte text: {}", source_, fragment.text.size(),
           status.ToString());
    }
    ids.insert(ids.end(), fragment_ids.begin(), fragment_ids.end());
  }
  return ids;
}

std::string SentencePieceTokenizer::token_bytes(TokenId id, bool render_special) const {
  return vocab_.token_bytes(id, render_special);
}

}  // namespace pagedgen
