// GGUF vocabularies -> tokenizers. "llama" vocabularies (tokens, scores, token types) are
// rebuilt as a SentencePiece ModelProto for libsentencepiece; "gpt2" vocabularies (tokens,
// merges, tokenizer.ggml.pre) become a byte-level BPE tokenizer. Defaults for absent keys
// follow llama.cpp, whose tokenizations the test vectors record.
#include "tokenizer/tokenizer_loader.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "model/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_pretokenizer.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "util/error.h"

namespace pagedgen {
namespace {

struct GgufVocab {
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  std::vector<float> scores;
};

GgufVocab read_gguf_vocab(const GgufFile& gguf, const std::string& source) {
  GgufVocab vocab;
  auto pieces = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!pieces || pieces->empty()) {
    fail(
        "{}: no tokenizer.ggml.tokens; the file carries no vocabulary (a vocabulary-less "
        "GGUF needs its HF tokenizer directory instead)",
        source);
  }
  vocab.pieces = std::move(*pieces);
  const size_t count = vocab.pieces.size();

  vocab.types.assign(count, TokenType::Normal);
  if (const auto numbers = gguf.get_int_array("tokenizer.ggml.token_type")) {
    if (numbers->size() != count) {
      fail(
          "{}: tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}; "
          "the vocabulary is inconsistent (re-convert the model)",
          source, numbers->size(), count);
    }
    // 0 (undefined) or unknown numbers: llama.cpp never emits or renders such tokens.
    for (size_t i = 0; i < count; ++i) {
      vocab.types[i] = token_type_from_number((*numbers)[i]).value_or(TokenType::Unused);
    }
  }
  vocab.scores.assign(count, 0.0f);
  if (auto scores = gguf.get_float_array("tokenizer.ggml.scores")) {
    if (scores->size() != count) {
      fail(
          "{}: tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {}; "
          "the vocabulary is inconsistent (re-convert the model)",
          source, scores->size(), count);
    }
    vocab.scores = std::move(*scores);
  }
  return vocab;
}

// A token id key: absent -> `fallback` (when it is a valid id), out of range -> Error.
std::optional<TokenId> read_token_id(const GgufFile& gguf, std::string_view key, size_t vocab_size,
                                     const std::string& source, std::optional<TokenId> fallback = {}) {
  const auto value = gguf.get_uint(key);
  if (!value) {
    if (fallback && static_cast<size_t>(*fallback) < vocab_size) return fallback;
    return std::nullopt;
  }
  if (*value >= vocab_size) {
    fail(
        "{}: {} = {} but the vocabulary has {} tokens; fix the key (gguf-set-metadata) or "
        "re-convert the model",
        source, key, *value, vocab_size);
  }
  return static_cast<TokenId>(*value);
}

// Ids GGUF lists as ending generation besides eos/eot (complete_special_tokens adds those).
std::vector<TokenId> read_extra_end_ids(const GgufFile& gguf, size_t vocab_size, const std::string& source) {
  std::vector<TokenId> ids;
  if (const auto eom = read_token_id(gguf, "tokenizer.ggml.eom_token_id", vocab_size, source)) {
    ids.push_back(*eom);
  }
  return ids;
}

// ---- SentencePiece ("llama") --------------------------------------------------------

// The ModelProto libsentencepiece accepts for this vocabulary. Our own id table keeps the
// GGUF types; only the proto is adjusted where the library is stricter than GGUF:
//  - exactly one UNKNOWN piece (the unk id); other "unknown" tokens become CONTROL, which
//    the library likewise never produces from text;
//  - BYTE pieces only when all 256 "<0xAB>" pieces exist (then byte fallback is on);
//  - no empty pieces.
SpmModel spm_model_for_library(const GgufVocab& vocab, TokenId unk, const SpecialTokens& special, bool add_space_prefix,
                               bool remove_extra_whitespaces, const std::string& source) {
  SpmModel model;
  model.model_type = SpmModelType::Bpe;
  model.normalizer_name = "identity";
  model.add_dummy_prefix = add_space_prefix;
  model.remove_extra_whitespaces = remove_extra_whitespaces;
  model.escape_whitespaces = true;

  std::array<bool, 256> byte_seen{};
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    if (vocab.types[id] != TokenType::Byte) continue;
    const auto byte = byte_piece_value(vocab.pieces[id]);
    if (byte && vocab.pieces[id] == fmt::format("<0x{:02X}>", *byte)) byte_seen[*byte] = true;
  }
  model.byte_fallback = std::find(byte_seen.begin(), byte_seen.end(), false) == byte_seen.end();

  // The library keeps normal/user-defined/unused pieces and control/unknown/byte pieces
  // in two maps; a text may appear once in each.
  std::unordered_map<std::string, size_t> normal_ids;
  std::unordered_map<std::string, size_t> reserved_ids;
  model.pieces.reserve(vocab.pieces.size());
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    SpmPiece piece{vocab.pieces[id], vocab.scores[id], vocab.types[id]};
    if (static_cast<TokenId>(id) == unk) {
      piece.type = TokenType::Unknown;
    } else if (piece.type == TokenType::Unknown) {
      piece.type = TokenType::Control;
    } else if (piece.type == TokenType::Byte && !model.byte_fallback) {
      piece.type = TokenType::Unused;
    }
    if (piece.text.empty()) piece.text = fmt::format("[EMPTY_{}]", id);  // as llama.cpp names them
    const bool normal_map =
        piece.type == TokenType::Normal || piece.type == TokenType::UserDefined || piece.type == TokenType::Unused;
    auto& seen = normal_map ? normal_ids : reserved_ids;
    if (const auto [it, inserted] = seen.emplace(piece.text, id); !inserted) {
      fail("{}: duplicate token in vocabulary: '{}' has ids {} and {}; re-convert the model", source, piece.text,
           it->second, id);
    }
    model.pieces.push_back(std::move(piece));
  }
  model.unk_id = unk;
  model.unk_piece = model.pieces[static_cast<size_t>(unk)].text;
  model.bos_id = special.bos;
  if (special.bos) model.bos_piece = model.pieces[static_cast<size_t>(*special.bos)].text;
  model.eos_id = special.eos;
  if (special.eos) model.eos_piece = model.pieces[static_cast<size_t>(*special.eos)].text;
  model.pad_id = special.pad;
  if (special.pad) model.pad_piece = model.pieces[static_cast<size_t>(*special.pad)].text;
  return model;
}

// Everything the SentencePiece path reads from GGUF.
struct GgufSpm {
  GgufVocab vocab;
  SpecialTokens special;
  bool add_space_prefix = true;
  std::string serialized_model;
};

GgufSpm read_gguf_spm(const GgufFile& gguf, const std::string& source) {
  GgufSpm spm;
  spm.vocab = read_gguf_vocab(gguf, source);
  const size_t count = spm.vocab.pieces.size();

  SpecialTokens& special = spm.special;
  special.bos = read_token_id(gguf, "tokenizer.ggml.bos_token_id", count, source, 1);
  special.eos = read_token_id(gguf, "tokenizer.ggml.eos_token_id", count, source, 2);
  special.unk = read_token_id(gguf, "tokenizer.ggml.unknown_token_id", count, source, 0);
  special.pad = read_token_id(gguf, "tokenizer.ggml.padding_token_id", count, source);
  special.eot = read_token_id(gguf, "tokenizer.ggml.eot_token_id", count, source);
  special.add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
  special.add_eos = gguf.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  special.end_of_generation = read_extra_end_ids(gguf, count, source);

  spm.add_space_prefix = gguf.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  const bool remove_extra_whitespaces = gguf.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false);
  // The library needs an unknown piece; id 0 is llama.cpp's default.
  const TokenId unk = special.unk.value_or(0);
  const SpmModel model =
      spm_model_for_library(spm.vocab, unk, special, spm.add_space_prefix, remove_extra_whitespaces, source);
  spm.serialized_model = serialize_spm_model(model);
  return spm;
}

std::unique_ptr<Tokenizer> load_gguf_spm(const GgufFile& gguf, const std::string& source) {
  GgufSpm spm = read_gguf_spm(gguf, source);
  SpmConfig config;
  config.serialized_model = std::move(spm.serialized_model);
  config.added_tokens = added_tokens_from_types(spm.vocab.pieces, spm.vocab.types);
  config.pieces = std::move(spm.vocab.pieces);
  config.types = std::move(spm.vocab.types);
  config.add_dummy_prefix = spm.add_space_prefix;
  config.special = std::move(spm.special);
  config.source = source;
  return std::make_unique<SentencePieceTokenizer>(std::move(config));
}

// ---- byte-level BPE ("gpt2") ---------------------------------------------------------

std::unique_ptr<Tokenizer> load_gguf_bpe(const GgufFile& gguf, const std::string& source) {
  GgufVocab vocab = read_gguf_vocab(gguf, source);
  const size_t count = vocab.pieces.size();

  const auto merge_texts = gguf.get_string_array("tokenizer.ggml.merges");
  if (!merge_texts) {
    fail(
        "{}: tokenizer.ggml.model is 'gpt2' but there is no tokenizer.ggml.merges; the "
        "vocabulary is incomplete (re-convert the model)",
        source);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merge_texts->size());
  for (size_t i = 0; i < merge_texts->size(); ++i) {
    const std::string& text = (*merge_texts)[i];
    // Split at the first space after the first byte: "a b" -> ("a", "b").
    const size_t space = text.find(' ', 1);
    if (space == std::string::npos) {
      fail(
          "{}: tokenizer.ggml.merges[{}] = '{}' is not two symbols separated by a space; "
          "re-convert the model",
          source, i, text);
    }
    merges.emplace_back(text.substr(0, space), text.substr(space + 1));
  }

  const std::string pre = gguf.get_string("tokenizer.ggml.pre").value_or("default");
  GgufBpePreset preset = gguf_bpe_preset(pre, source);

  SpecialTokens special;
  special.bos = read_token_id(gguf, "tokenizer.ggml.bos_token_id", count, source);
  special.eos = read_token_id(gguf, "tokenizer.ggml.eos_token_id", count, source);
  special.unk = read_token_id(gguf, "tokenizer.ggml.unknown_token_id", count, source);
  special.pad = read_token_id(gguf, "tokenizer.ggml.padding_token_id", count, source);
  special.eot = read_token_id(gguf, "tokenizer.ggml.eot_token_id", count, source);
  special.add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(preset.add_bos);
  special.add_eos = gguf.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  special.end_of_generation = read_extra_end_ids(gguf, count, source);
  if (special.add_bos && !special.bos) {
    fail(
        "{}: tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set; "
        "set one of them (gguf-set-metadata)",
        source);
  }

  BpeConfig config;
  config.pretokenizer = PreTokenizer(std::move(preset.rules));
  config.added_tokens = added_tokens_from_types(vocab.pieces, vocab.types);
  config.pieces = std::move(vocab.pieces);
  config.types = std::move(vocab.types);
  config.merges = std::move(merges);
  config.ignore_merges = preset.ignore_merges;
  config.special = std::move(special);
  config.source = source;
  return std::make_unique<BpeTokenizer>(std::move(config));
}

std::string require_model(const GgufFile& gguf, const std::string& source) {
  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) {
    fail(
        "{}: no tokenizer.ggml.model; the file carries no vocabulary (use a GGUF converted "
        "with its tokenizer, or the model's HF directory)",
        source);
  }
  return *model;
}

}  // namespace

std::string gguf_spm_model_proto(const GgufFile& gguf) {
  const std::string source = gguf.path().string();
  const std::string model = require_model(gguf, source);
  if (model != "llama") {
    fail("{}: tokenizer.ggml.model is '{}', not a SentencePiece ('llama') vocabulary", source, model);
  }
  return read_gguf_spm(gguf, source).serialized_model;
}

std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& gguf) {
  const std::string source = gguf.path().string();
  const std::string model = require_model(gguf, source);
  if (model == "llama") return load_gguf_spm(gguf, source);
  if (model == "gpt2") return load_gguf_bpe(gguf, source);
  fail(
      "{}: tokenizer.ggml.model '{}' is not supported (supported: 'llama' = SentencePiece, "
      "'gpt2' = byte-level BPE)",
      source, model);
}

}  // namespace pagedgen
