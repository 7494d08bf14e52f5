// Where tests find their inputs: the source tree, ../shared, the default model, and the
// built pagedgen binary. Tests that need something absent skip with a message.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pagedgen::test {

// Each is found at run time first: $PAGEDGEN_TEST_SOURCE_DIR / $PAGEDGEN_TEST_BINARY, then
// share/pagedgen and bin/pagedgen beside the test's directory (the GPU bundle's layout),
// then the source and build trees the test was built from.
std::filesystem::path source_dir();
std::filesystem::path data_dir();         // tests/data
std::filesystem::path shared_dir();       // ../shared beside the repository
std::filesystem::path pagedgen_binary();  // the built app
// The default model, when scripts/fetch-model.sh has placed it.
std::optional<std::filesystem::path> default_model();
// Gemma 3 270M (gemma-3-270m-q4_k_m.gguf) beside it, when scripts/fetch-gemma3.sh has placed it.
std::optional<std::filesystem::path> gemma3_model();

// Ends the current test case, with a message, when the default model is not installed.
#define PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL()                                        \
  if (!::pagedgen::test::default_model()) {                                          \
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)"); \
    return;                                                                          \
  }

// The whole file as bytes; fails the current test when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

// The texts of a tokenizer-vectors .inp file: separated by "\n__ggml_vocab_test__\n"; the
// file ends with the separator, so the empty remainder after it is not a case.
std::vector<std::string> read_vocab_test_texts(const std::filesystem::path& path);

}  // namespace pagedgen::test
