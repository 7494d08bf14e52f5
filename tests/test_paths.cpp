#include "test_paths.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "loader/default_model.h"

namespace pagedgen::test {

std::filesystem::path source_dir() { return PAGEDGEN_SOURCE_DIR; }
std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
std::filesystem::path shared_dir() { return source_dir().parent_path() / "shared"; }
std::filesystem::path pagedgen_binary() { return std::filesystem::path(PAGEDGEN_BINARY_DIR) / "app" / "pagedgen"; }
std::optional<std::filesystem::path> default_model() { return find_default_model(); }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

std::vector<std::string> read_vocab_test_texts(const std::filesystem::path& path) {
  const std::string content = read_file(path);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  std::size_t start = 0;
  for (std::size_t at = content.find(separator); at != std::string::npos; at = content.find(separator, start)) {
    texts.push_back(content.substr(start, at - start));
    start = at + separator.size();
  }
  if (start < content.size()) texts.push_back(content.substr(start));
  return texts;
}

}  // namespace pagedgen::test
