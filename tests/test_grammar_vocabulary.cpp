// The grammar engine on real vocabularies of both tokenizer kinds (../shared/tokenizer-
// vectors): each token's exact bytes (SentencePiece byte fallback and "▁", byte-level BPE's
// byte alphabet, control tokens without text), and masks along real token streams, each
// equal to trying every token of the vocabulary on a copy of the matcher.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/token_vocabulary.h"
#include "model/gguf.h"
#include "test_grammar_support.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loader.h"

namespace pagedgen {
namespace {

std::unique_ptr<Tokenizer> shared_tokenizer(const std::string& file) {
  const std::filesystem::path path = test::shared_dir() / "tokenizer-vectors" / file;
  if (!std::filesystem::exists(path)) return nullptr;
  return load_tokenizer(GgufFile(path));
}

#define SKIP_WITHOUT(tokenizer, file)                                   \
  if (!(tokenizer)) {                                                   \
    MESSAGE("skipped: ../shared/tokenizer-vectors/" file " is absent"); \
    return;                                                             \
  }

TokenId id_of_piece(const Tokenizer& tokenizer, std::string_view piece) {
  for (TokenId id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.piece(id) == piece) return id;
  FAIL("no piece ", std::string(piece));
  return 0;
}

// The longest-match split of `text` over the vocabulary's bytes: a token stream a model
// could write, with tokens that run across JSON syntax (a tokenizer's own encoding of a
// SentencePiece text would start with its dummy-prefix space, which generation never has).
std::vector<TokenId> longest_match(const TokenVocabulary& vocabulary, std::string_view text) {
  std::vector<TokenId> ids;
  for (size_t at = 0; at < text.size();) {
    TokenId best = 0;
    size_t best_size = 0;
    for (TokenId id = 0; id < vocabulary.size(); ++id) {
      const std::string& bytes = vocabulary.bytes_by_id[static_cast<size_t>(id)];
      if (bytes.size() > best_size && text.substr(at).starts_with(bytes)) best = id, best_size = bytes.size();
    }
    REQUIRE(best_size > 0);
    ids.push_back(best);
    at += best_size;
  }
  return ids;
}

// Feeds `ids`, checking at every step that the mask equals the brute-force reference and
// allows the next token; ends with end-of-generation the only tokens allowed.
void walk(const std::shared_ptr<const CompiledGrammar>& grammar, const std::vector<TokenId>& ids) {
  GrammarMatcher matcher(grammar);
  for (size_t step = 0; step < ids.size(); ++step) {
    CAPTURE(step);
    const std::vector<TokenId> allowed = test::allowed_ids(matcher);
    CHECK(allowed == test::brute_force_ids(matcher));
    CHECK(std::ranges::binary_search(allowed, ids[step]));
    REQUIRE(matcher.accept_token(ids[step]));
  }
  std::vector<TokenId> end = grammar->vocabulary().end_of_generation;
  std::ranges::sort(end);
  CHECK(test::allowed_ids(matcher) == end);
}

constexpr std::string_view kSchema = R"({"type": "object", "properties": {
    "title": {"type": "string", "maxLength": 40},
    "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
    "genres": {"type": "array", "items": {"enum": ["drama", "comedy", "sci-fi"]}, "minItems": 1},
    "rating": {"type": ["number", "null"]}},
  "required": ["title", "year", "genres"]})";
constexpr std::string_view kDocument =
    "{\"title\":\"Amélie \\\"2\\\" — 東京 🎬\",\"year\":2001,\"genres\":[\"comedy\",\"drama\"],\"rating\":8.25}";

TEST_CASE("SentencePiece: byte-fallback tokens are their byte, '▁' a space, control tokens nothing") {
  const auto tokenizer = shared_tokenizer("ggml-vocab-llama-spm.gguf");
  SKIP_WITHOUT(tokenizer, "ggml-vocab-llama-spm.gguf");
  const TokenVocabulary vocabulary = token_vocabulary(*tokenizer);
  REQUIRE(vocabulary.size() == tokenizer->vocab_size());
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "<0xC3>"))] == "\xC3");
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "<0x0A>"))] == "\n");
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "\xE2\x96\x81the"))] == " the");
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(*tokenizer->special().bos)].empty());
  CHECK(vocabulary.end_of_generation == tokenizer->special().end_of_generation);
}

TEST_CASE("byte-level BPE: the byte alphabet decodes to raw bytes") {
  const auto tokenizer = shared_tokenizer("ggml-vocab-gpt-2.gguf");
  SKIP_WITHOUT(tokenizer, "ggml-vocab-gpt-2.gguf");
  const TokenVocabulary vocabulary = token_vocabulary(*tokenizer);
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "\xC3\x83"))] ==
        "\xC3");  // "Ã" stands for byte C3
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "\xC4\xA0the"))] == " the");
  CHECK(vocabulary.bytes_by_id[static_cast<size_t>(id_of_piece(*tokenizer, "\",\""))] == "\",\"");
}

TEST_CASE("masks along real token streams equal the brute-force reference, both tokenizer kinds") {
  for (const std::string file : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
    CAPTURE(file);
    const auto tokenizer = shared_tokenizer(file);
    if (!tokenizer) {
      MESSAGE("skipped: ../shared/tokenizer-vectors/", file, " is absent");
      continue;
    }
    const auto trie = std::make_shared<const TokenTrie>(token_vocabulary(*tokenizer));
    const auto grammar = std::make_shared<const CompiledGrammar>(json_schema_grammar(kSchema), trie);
    walk(grammar, longest_match(trie->vocabulary(), kDocument));
    // The tokenizer's own split, where it has no dummy prefix (byte-level BPE).
    if (!tokenizer->decode_strips_leading_space()) walk(grammar, tokenizer->encode(kDocument, false));
    // json_object mode on the same text.
    const auto object = std::make_shared<const CompiledGrammar>(json_object_grammar(), trie);
    walk(object, longest_match(trie->vocabulary(), kDocument));
  }
}

}  // namespace
}  // namespace pagedgen
