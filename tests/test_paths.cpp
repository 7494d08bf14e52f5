#include "test_paths.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "loader/default_model.h"

namespace pagedgen::test {

namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

// `relative` beside the running test executable, when it is there: a GPU bundle
// (scripts/make-gpu-bundle.sh) holds tests/, bin/pagedgen and share/pagedgen side by side.
std::optional<std::filesystem::path> beside_executable(const std::filesystem::path& relative) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const std::filesystem::path path = (exe.parent_path() / relative).lexically_normal();
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return path;
}

[[noreturn, maybe_unused]] void no_path(const std::string& what, const char* variable) {
  throw std::runtime_error(what + " not found: set " + variable +
                           " (this build compiles in no paths; a GPU bundle finds it beside the test)");
}

}  // namespace

// Run time first, so that a bundle works wherever it is unpacked; then the trees the tests
// were built from (absent from a PAGEDGEN_RELOCATABLE build).
std::filesystem::path source_dir() {
  if (const char* dir = env("PAGEDGEN_TEST_SOURCE_DIR")) return dir;
  if (const auto bundled = beside_executable("../share/pagedgen")) return *bundled;
#ifdef PAGEDGEN_SOURCE_DIR
  return PAGEDGEN_SOURCE_DIR;
#else
  no_path("the source tree (samples/, tests/data)", "PAGEDGEN_TEST_SOURCE_DIR");
#endif
}
std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
std::filesystem::path shared_dir() { return source_dir().parent_path() / "shared"; }
std::filesystem::path pagedgen_binary() {
  if (const char* binary = env("PAGEDGEN_TEST_BINARY")) return binary;
  if (const auto bundled = beside_executable("../bin/pagedgen")) return *bundled;
#ifdef PAGEDGEN_BINARY_DIR
  return std::filesystem::path(PAGEDGEN_BINARY_DIR) / "app" / "pagedgen";
#else
  no_path("the pagedgen binary", "PAGEDGEN_TEST_BINARY");
#endif
}
std::optional<std::filesystem::path> default_model() { return find_default_model(); }
std::optional<std::filesystem::path> gemma3_model() {
  const std::filesystem::path path = default_models_dir() / "gemma-3-270m-q4_k_m.gguf";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return path;
}

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
