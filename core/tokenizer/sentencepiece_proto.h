// SentencePiece's ModelProto (sentencepiece_model.proto) as a plain struct, with a small
// protobuf wire-format writer and reader for the fields we use. Debian ships no
// sentencepiece_model.pb.h, so a GGUF vocabulary is rebuilt into these bytes and handed
// to libsentencepiece's LoadFromSerializedProto; an HF tokenizer.model is read back for
// its piece table and normalizer flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_type.h"

namespace pagedgen {

// TrainerSpec.ModelType
enum class SpmModelType : int32_t { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

struct SpmPiece {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

// Field numbers are sentencepiece_model.proto's (checked against the v0.1.97 source):
//   ModelProto      pieces=1 {piece=1, score=2, type=3}, trainer_spec=2, normalizer_spec=3
//   TrainerSpec     model_type=3, vocab_size=4, treat_whitespace_as_suffix=24,
//                   byte_fallback=35, unk_id=40, bos_id=41, eos_id=42, pad_id=43,
//                   unk_piece=45, bos_piece=46, eos_piece=47, pad_piece=48
//   NormalizerSpec  name=1, precompiled_charsmap=2, add_dummy_prefix=3,
//                   remove_extra_whitespaces=4, escape_whitespaces=5
// Defaults are the proto2 defaults, so a parsed model that omits a field reads right.
struct SpmModel {
  std::vector<SpmPiece> pieces;

  SpmModelType model_type = SpmModelType::Unigram;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  std::optional<int32_t> unk_id = 0;  // the proto's -1 ("none") reads as nullopt
  std::optional<int32_t> bos_id = 1;
  std::optional<int32_t> eos_id = 2;
  std::optional<int32_t> pad_id;
  std::string unk_piece = "<unk>";
  std::string bos_piece = "<s>";
  std::string eos_piece = "</s>";
  std::string pad_piece = "<pad>";

  std::string normalizer_name;
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Every field above, written explicitly (even when equal to its default).
std::string serialize_spm_model(const SpmModel& model);

// Reads the fields above and skips the rest. Throws Error naming `source` and the byte
// offset when the bytes are not a well-formed ModelProto.
SpmModel parse_spm_model(std::string_view bytes, std::string_view source);

}  // namespace pagedgen
