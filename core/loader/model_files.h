// Opens a model from disk, whatever its format: a GGUF file, or an HF directory with
// config.json and safetensors. Gives the config, the tokenizer, the chat template text and
// raw (possibly quantized) weight tensors under canonical GGUF-style names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loader/model_vocabulary.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/raw_tensor.h"
#include "util/stop_token.h"

namespace pagedgen {

class GgufFile;
class SafetensorsModel;
class Tokenizer;

enum class ModelFormat { Gguf, HfSafetensors };

class ModelFiles {
 public:
  // `path`: a .gguf file or an HF model directory. Throws Error.
  explicit ModelFiles(const std::filesystem::path& path);
  ~ModelFiles();
  ModelFiles(ModelFiles&&) noexcept;
  ModelFiles& operator=(ModelFiles&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  ModelFormat format() const { return format_; }
  const ModelConfig& config() const { return config_; }
  const ModelVocabulary& vocabulary() const { return *vocabulary_; }
  const Tokenizer& tokenizer() const { return vocabulary_->tokenizer(); }
  // The chat template text shipped with the model, if any.
  const std::optional<std::string>& chat_template_text() const { return vocabulary_->chat_template_text(); }
  // The GGUF file when format() == Gguf (for inspect), else nullptr.
  const GgufFile* gguf() const { return gguf_.get(); }

  // Every weight tensor of the file under its canonical name.
  const std::vector<RawTensor>& tensors() const { return tensors_; }
  const RawTensor* find_tensor(std::string_view canonical_name) const;
  // Loads every tensor the config needs in `form` (model_weights.h); Stopped when `stop`
  // asks.
  ModelWeights load_weights(WeightForm form = WeightForm::kFloat32, const StopToken& stop = {}) const;

 private:
  std::filesystem::path path_;
  ModelFormat format_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<SafetensorsModel> safetensors_;
  ModelConfig config_;
  std::unique_ptr<ModelVocabulary> vocabulary_;
  std::vector<RawTensor> tensors_;
};

}  // namespace pagedgen
