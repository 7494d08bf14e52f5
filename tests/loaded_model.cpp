#include "loaded_model.h"

#include <memory>
#include <optional>

#include "test_paths.h"

namespace pagedgen::test {

namespace {

std::unique_ptr<LoadedModel> load_default_model(WeightForm form) {
  const std::optional<std::filesystem::path> path = default_model();
  if (!path) return nullptr;
  ModelFiles files(*path);
  ModelWeights weights = files.load_weights(form);
  return std::make_unique<LoadedModel>(LoadedModel{std::move(files), std::move(weights)});
}

}  // namespace

const LoadedModel* loaded_default_model(WeightForm form) {
  if (form == WeightForm::kFloat32) {
    static const std::unique_ptr<LoadedModel> float32 = load_default_model(form);
    return float32.get();
  }
  static const std::unique_ptr<LoadedModel> packed = load_default_model(form);
  return packed.get();
}

}  // namespace pagedgen::test
