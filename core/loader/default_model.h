// Where the default model lives when scripts/fetch-model.sh has placed it, so that
// `pagedgen` runs without -m. PAGEDGEN_MODEL (a file) overrides the location.
#pragma once

#include <filesystem>
#include <optional>

namespace pagedgen {

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $PAGEDGEN_MODELS_DIR, else $XDG_CACHE_HOME/pagedgen/models, else ~/.cache/pagedgen/models.
std::filesystem::path default_models_dir();

// $PAGEDGEN_MODEL if set, else default_models_dir()/kDefaultModelFile; nullopt when that
// file does not exist.
std::optional<std::filesystem::path> find_default_model();

}  // namespace pagedgen
