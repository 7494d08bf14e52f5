#include "loader/model_vocabulary.h"

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"

namespace pagedgen {

ModelVocabulary::ModelVocabulary(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    tokenizer_ = load_hf_tokenizer(path);
    chat_template_text_ = hf_chat_template(path);
    return;
  }
  *this = ModelVocabulary(GgufFile(path));
}

ModelVocabulary::ModelVocabulary(const GgufFile& gguf)
    : path_(gguf.path()),
      tokenizer_(load_tokenizer(gguf)),
      chat_template_text_(gguf.get_string("tokenizer.chat_template")) {}

ModelVocabulary::~ModelVocabulary() = default;
ModelVocabulary::ModelVocabulary(ModelVocabulary&&) noexcept = default;
ModelVocabulary& ModelVocabulary::operator=(ModelVocabulary&&) noexcept = default;

}  // namespace pagedgen
