// Builds the right Tokenizer from a model's files: a GGUF vocabulary (tokenizer.ggml.*) or
// an HF directory (tokenizer.model or tokenizer.json, plus tokenizer_config.json), and
// reads the HF chat template text.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace pagedgen {

class GgufFile;

// tokenizer.ggml.model "llama" -> SentencePiece, "gpt2" -> byte-level BPE. Throws Error
// naming the model file and the key for anything missing or unsupported.
std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& gguf);

// The SentencePiece ModelProto rebuilt from a GGUF "llama" vocabulary: the bytes a
// tokenizer.model for it would hold (load_tokenizer hands the same bytes to
// libsentencepiece). Throws Error like load_tokenizer.
std::string gguf_spm_model_proto(const GgufFile& gguf);

// An HF model directory: tokenizer.model (SentencePiece) when present, else tokenizer.json
// (byte-level BPE); special tokens and add_bos from tokenizer_config.json, extra
// end-of-generation ids from generation_config.json. Throws Error.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& dir);

// tokenizer_config.json "chat_template": a string, or a list of {name, template} from which
// "default" is taken; else chat_template.jinja beside it. nullopt when there is none.
std::optional<std::string> hf_chat_template(const std::filesystem::path& dir);

}  // namespace pagedgen
