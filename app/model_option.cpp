#include "model_option.h"

#include "loader/default_model.h"
#include "util/error.h"

namespace pagedgen::app {

void add_model_option(CLI::App& command, std::string& path) {
  command.add_option("-m,--model", path,
                     fmt::format("Model: a .gguf file or an HF directory (config.json, *.safetensors, "
                                 "tokenizer). Default: $PAGEDGEN_MODEL, else {}",
                                 (default_models_dir() / kDefaultModelFile).string()));
}

std::filesystem::path resolve_model_path(const std::string& path) {
  if (!path.empty()) return path;
  if (const auto found = find_default_model()) return *found;
  fail(
      "no model given (-m) and the default model is not installed at '{}'; run "
      "scripts/fetch-model.sh, or pass -m MODEL.gguf",
      (default_models_dir() / kDefaultModelFile).string());
}

}  // namespace pagedgen::app
