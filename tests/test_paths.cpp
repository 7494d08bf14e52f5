#include "test_paths.h"

#include "model/default_model.h"

namespace pagedgen::test {

std::filesystem::path source_dir() { return PAGEDGEN_SOURCE_DIR; }
std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
std::filesystem::path shared_dir() { return source_dir().parent_path() / "shared"; }
std::filesystem::path pagedgen_binary() { return std::filesystem::path(PAGEDGEN_BINARY_DIR) / "app" / "pagedgen"; }
std::optional<std::filesystem::path> default_model() { return find_default_model(); }

}  // namespace pagedgen::test
