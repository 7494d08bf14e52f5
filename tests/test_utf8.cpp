// UTF-8 stepping, complete-character boundaries and U+FFFD repair; IncrementalDecoder
// never emitting part of a character, on a byte-per-token vocabulary and on the default
// model's tokenizer (skipped when the model is absent).
#include <doctest/doctest.h>

#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "tokenizer/utf8.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

const std::string kFffd(kReplacementChar);
const std::string kLlama = "\xF0\x9F\xA6\x99";  // U+1F999, 4 bytes
const std::string kNi = "\xE4\xBD\xA0";         // U+4F60, 3 bytes

// One token per byte (GPT-2 byte-level symbols, no merges): every multi-byte character
// is split across tokens.
BpeTokenizer byte_per_token_tokenizer() {
  BpeConfig config;
  for (int b = 0; b < 256; ++b) {
    config.pieces.push_back(byte_level_encode(std::string(1, static_cast<char>(b))));
    config.types.push_back(TokenType::Normal);
  }
  config.source = "byte-per-token test vocabulary";
  return BpeTokenizer(std::move(config));
}

// Pushes every id; returns the chunks push() returned, then finish()'s.
std::vector<std::string> stream(const Tokenizer& tokenizer, const std::vector<TokenId>& ids) {
  IncrementalDecoder decoder(tokenizer, /*render_special=*/false);
  std::vector<std::string> chunks;
  for (const TokenId id : ids) chunks.push_back(decoder.push(id));
  chunks.push_back(decoder.finish());
  return chunks;
}

}  // namespace

TEST_CASE("utf8_next classifies valid, invalid and truncated sequences") {
  const auto step = [](std::string_view text) { return utf8_next(text, 0); };
  CHECK(step("A").status == Utf8Status::Valid);
  CHECK(step("A").code_point == U'A');
  CHECK(step("\xC3\xA9").length == 2);
  CHECK(step("\xC3\xA9").code_point == 0xE9);
  CHECK(step(kNi).code_point == 0x4F60);
  CHECK(step(kLlama).code_point == 0x1F999);
  CHECK(step(kLlama).length == 4);

  // Never a valid lead byte.
  for (const char* bad : {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xF5\x80\x80\x80", "\xFF"}) {
    CAPTURE(bad);
    CHECK(step(bad).status == Utf8Status::Invalid);
    CHECK(step(bad).length == 1);
  }
  // Overlong, surrogate and > U+10FFFF second bytes.
  CHECK(step("\xE0\x80\x80").status == Utf8Status::Invalid);
  CHECK(step("\xED\xA0\x80").status == Utf8Status::Invalid);
  CHECK(step("\xF0\x80\x80\x80").status == Utf8Status::Invalid);
  CHECK(step("\xF4\x90\x80\x80").status == Utf8Status::Invalid);
  // A good prefix broken later: the maximal subpart is the bytes before the bad one.
  CHECK(step("\xF0\x9F\x41").status == Utf8Status::Invalid);
  CHECK(step("\xF0\x9F\x41").length == 2);
  // Cut off by the end.
  CHECK(step("\xF0\x9F\xA6").status == Utf8Status::Truncated);
  CHECK(step("\xF0\x9F\xA6").length == 3);
  CHECK(step("\xE4").status == Utf8Status::Truncated);
}

TEST_CASE("utf8_complete_prefix holds back only an unfinished character") {
  CHECK(utf8_complete_prefix("") == 0);
  CHECK(utf8_complete_prefix("abc") == 3);
  CHECK(utf8_complete_prefix("ab" + kLlama) == 6);
  CHECK(utf8_complete_prefix("ab" + kLlama.substr(0, 1)) == 2);
  CHECK(utf8_complete_prefix("ab" + kLlama.substr(0, 2)) == 2);
  CHECK(utf8_complete_prefix("ab" + kLlama.substr(0, 3)) == 2);
  CHECK(utf8_complete_prefix(kNi + kNi.substr(0, 2)) == 3);
  CHECK(utf8_complete_prefix(kLlama + kLlama + kNi.substr(0, 1)) == 8);
  // Invalid bytes are finished (they become U+FFFD), even at the end.
  CHECK(utf8_complete_prefix("a\xFF") == 2);
  CHECK(utf8_complete_prefix("a\x80\x80") == 3);
  CHECK(utf8_complete_prefix("\xF0\x9F\x41") == 3);
}

TEST_CASE("utf8_sanitize replaces each maximal ill-formed subpart with one U+FFFD") {
  CHECK(utf8_sanitize("plain " + kNi + kLlama) == "plain " + kNi + kLlama);
  CHECK(utf8_sanitize("a\xFF"
                      "b") == "a" + kFffd + "b");
  CHECK(utf8_sanitize("\xE0\x80\x80") == kFffd + kFffd + kFffd);
  CHECK(utf8_sanitize("\xF0\x9F\xA6") == kFffd);
  CHECK(utf8_sanitize("\xF0\x9F\xA6"
                      "A") == kFffd + "A");
  CHECK(utf8_sanitize("\xED\xA0\x80") == kFffd + kFffd + kFffd);
  CHECK(utf8_is_valid(kLlama + kNi));
  CHECK_FALSE(utf8_is_valid("\xC3"));
  CHECK_FALSE(utf8_is_valid("\xC0\xAF"));
}

TEST_CASE("utf8_append encodes every length and refuses non-characters") {
  std::string out;
  utf8_append(out, U'A');
  utf8_append(out, 0xE9);
  utf8_append(out, 0x4F60);
  utf8_append(out, 0x1F999);
  CHECK(out == "A\xC3\xA9" + kNi + kLlama);
  std::string bad;
  utf8_append(bad, 0xD800);
  utf8_append(bad, 0x110000);
  CHECK(bad == kFffd + kFffd);
}

TEST_CASE("IncrementalDecoder emits a character only once all its bytes arrived") {
  const BpeTokenizer tokenizer = byte_per_token_tokenizer();
  const std::string text = "a" + kLlama + kNi + "b";
  const std::vector<TokenId> ids = tokenizer.encode(text, false);
  REQUIRE(ids.size() == text.size());  // one token per byte
  const std::vector<std::string> chunks = stream(tokenizer, ids);
  const std::vector<std::string> expected = {"a", "", "", "", kLlama, "", "", kNi, "b", ""};
  CHECK(chunks == expected);
}

TEST_CASE("IncrementalDecoder turns invalid bytes into U+FFFD and flushes a cut character") {
  const BpeTokenizer tokenizer = byte_per_token_tokenizer();
  // Byte tokens straight from the vocabulary: 0xFF, a lead byte followed by 'A', and a
  // 4-byte character cut after 2 bytes at the end.
  const auto id = [&](unsigned char byte) {
    return *tokenizer.find_token(byte_level_encode(std::string(1, static_cast<char>(byte))));
  };
  const std::vector<TokenId> ids = {id('x'), id(0xFF), id(0xE4), id('A'), id(0xF0), id(0x9F)};
  const std::vector<std::string> chunks = stream(tokenizer, ids);
  const std::vector<std::string> expected = {"x", kFffd, "", kFffd + "A", "", "", kFffd};
  CHECK(chunks == expected);
  CHECK(tokenizer.decode(ids, false) == "x" + kFffd + kFffd + "A" + kFffd);
}

TEST_CASE("IncrementalDecoder on the default model: emoji and CJK across tokens") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh places it)");
    return;
  }
  const GgufFile gguf(*model);
  const auto tokenizer = load_tokenizer(gguf);
  const std::string text = "Hi " + kLlama + " and \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F " + kNi +
                           "\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C!";
  const std::vector<TokenId> ids = tokenizer->encode(text, false);
  // The emoji are spelled with byte tokens: more tokens than characters there.
  CHECK(ids.size() > 12);
  std::string joined;
  size_t partial_tokens = 0;  // tokens that completed no character
  IncrementalDecoder decoder(*tokenizer, false);
  for (const TokenId id : ids) {
    const std::string chunk = decoder.push(id);
    CHECK(utf8_is_valid(chunk));
    if (chunk.empty()) ++partial_tokens;
    joined += chunk;
  }
  CHECK(decoder.finish().empty());
  CHECK(partial_tokens > 0);
  CHECK(joined == text);
  CHECK(tokenizer->decode(ids, false) == text);
}

TEST_CASE("IncrementalDecoder keeps SentencePiece's leading space when continuing a prompt") {
  const auto vocab = pagedgen::test::shared_dir() / "tokenizer-vectors" / "ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(vocab)) {
    MESSAGE("skipped: " << vocab.string() << " is absent");
    return;
  }
  const pagedgen::GgufFile gguf(vocab);
  const auto tokenizer = pagedgen::load_tokenizer(gguf);
  const std::vector<pagedgen::TokenId> ids = tokenizer->encode("Paris is big", false);  // "▁Paris", ...
  auto stream = [&](bool at_text_start) {
    pagedgen::IncrementalDecoder decoder(*tokenizer, false, at_text_start);
    std::string text;
    for (pagedgen::TokenId id : ids) text += decoder.push(id);
    return text + decoder.finish();
  };
  CHECK(stream(true) == "Paris is big");    // a text of its own, as decode() gives
  CHECK(stream(false) == " Paris is big");  // generated after a prompt: the space is output
}
