#include "loaded_model.h"

#include <memory>
#include <optional>

#include "test_paths.h"

namespace pagedgen::test {

const LoadedModel* loaded_default_model() {
  static const std::unique_ptr<LoadedModel> loaded = []() -> std::unique_ptr<LoadedModel> {
    const std::optional<std::filesystem::path> path = default_model();
    if (!path) return nullptr;
    ModelFiles files(*path);
    ModelWeights weights = files.load_weights();
    return std::make_unique<LoadedModel>(LoadedModel{std::move(files), std::move(weights)});
  }();
  return loaded.get();
}

}  // namespace pagedgen::test
