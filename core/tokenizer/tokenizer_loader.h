// Builds the right Tokenizer for a model's files: GGUF vocabularies ("llama" ->
// SentencePiece, "gpt2" -> byte-level BPE) and HF directories (tokenizer.model or
// tokenizer.json, with tokenizer_config.json).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace pagedgen {

class GgufFile;

// Throws Error naming the file and what is missing or unsupported.
std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& gguf);
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& dir);

// tokenizer_config.json's chat_template (a string, or the "default" entry of a list).
std::optional<std::string> hf_chat_template(const std::filesystem::path& dir);

}  // namespace pagedgen
