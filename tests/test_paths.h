// Where tests find their inputs: the source tree, ../shared, the default model, and the
// built pagedgen binary. Tests that need something absent skip with a message.
#pragma once

#include <filesystem>
#include <optional>

namespace pagedgen::test {

std::filesystem::path source_dir();
std::filesystem::path data_dir();            // tests/data
std::filesystem::path shared_dir();          // ../shared beside the repository
std::filesystem::path pagedgen_binary();     // the built app
// The default model, when scripts/fetch-model.sh has placed it.
std::optional<std::filesystem::path> default_model();

}  // namespace pagedgen::test
