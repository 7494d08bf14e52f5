#include "loader/default_model.h"

#include <cstdlib>

namespace pagedgen {

namespace {
const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}
}  // namespace

std::filesystem::path default_models_dir() {
  if (const char* dir = env("PAGEDGEN_MODELS_DIR")) return dir;
  if (const char* cache = env("XDG_CACHE_HOME")) return std::filesystem::path(cache) / "pagedgen" / "models";
  if (const char* home = env("HOME")) return std::filesystem::path(home) / ".cache" / "pagedgen" / "models";
  return std::filesystem::path(".cache") / "pagedgen" / "models";
}

std::optional<std::filesystem::path> find_default_model() {
  std::filesystem::path path = default_models_dir() / kDefaultModelFile;
  if (const char* file = env("PAGEDGEN_MODEL")) path = file;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return path;
}

}  // namespace pagedgen
