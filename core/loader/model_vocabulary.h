// The vocabulary side of a model: its tokenizer and chat template text, from a GGUF file of
// any architecture (only tokenizer.* keys are read, so vocabulary-only files work) or an
// HF directory (tokenizer files; no config.json or weights needed). ModelFiles holds one
// for the model it opens; --tokenizer and `tokenize` open one alone.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace pagedgen {

class GgufFile;
class Tokenizer;

class ModelVocabulary {
 public:
  // `path`: a .gguf file or an HF directory. Throws Error.
  explicit ModelVocabulary(const std::filesystem::path& path);
  // The vocabulary of an open GGUF file. Throws Error.
  explicit ModelVocabulary(const GgufFile& gguf);
  ~ModelVocabulary();
  ModelVocabulary(ModelVocabulary&&) noexcept;
  ModelVocabulary& operator=(ModelVocabulary&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The chat template text shipped with the model, if any.
  const std::optional<std::string>& chat_template_text() const { return chat_template_text_; }

 private:
  std::filesystem::path path_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<std::string> chat_template_text_;
};

}  // namespace pagedgen
