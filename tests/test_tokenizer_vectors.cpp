// Every case of every vocabulary in ../shared/tokenizer-vectors (llama.cpp's reference
// tokenizations): exact ids without special-token parsing, and decoding the expected ids
// gives the text back (SentencePiece's added leading space dropped). Skips with a message
// when the folder is absent.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "model/gguf.h"
#include "test_paths.h"
#include "token_id_text.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("tokenizer vectors: exact ids and round-trip decoding for every vocabulary") {
  const std::filesystem::path dir = shared_dir() / "tokenizer-vectors";
  if (!std::filesystem::is_directory(dir)) {
    MESSAGE("skipped: ", dir.string(), " is absent (the llama.cpp tokenizer vectors live there)");
    return;
  }
  std::vector<std::filesystem::path> vocab_files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".gguf") vocab_files.push_back(entry.path());
  }
  std::sort(vocab_files.begin(), vocab_files.end());
  REQUIRE_FALSE(vocab_files.empty());

  for (const auto& vocab_file : vocab_files) {
    const std::string name = vocab_file.filename().string();
    CAPTURE(name);
    const std::vector<std::string> texts = read_vocab_test_texts(vocab_file.string() + ".inp");
    const std::vector<std::vector<TokenId>> expected = read_token_id_lines(vocab_file.string() + ".out");
    REQUIRE(texts.size() == expected.size());

    const GgufFile gguf(vocab_file);
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(gguf);
    size_t encoded_ok = 0;
    size_t decoded_ok = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      CAPTURE(i);
      const std::vector<TokenId> ids = tokenizer->encode(texts[i], /*parse_special=*/false);
      if (ids == expected[i]) {
        ++encoded_ok;
      } else {
        FAIL_CHECK("encode mismatch for '", texts[i], "': expected [", join_token_ids(expected[i]), "] got [", join_token_ids(ids), "]");
      }
      const std::string decoded = tokenizer->decode(expected[i], /*render_special=*/false);
      if (decoded == texts[i]) {
        ++decoded_ok;
      } else {
        FAIL_CHECK("decode mismatch: expected '", texts[i], "' got '", decoded, "'");
      }
    }
    MESSAGE(name, ": ", encoded_ok, "/", texts.size(), " encoded exactly, ", decoded_ok, "/", texts.size(),
            " decoded back");
    CHECK(encoded_ok == texts.size());
    CHECK(decoded_ok == texts.size());
  }
}
