// Byte-level BPE: GPT-2's byte<->unicode mapping, merges applied by rank (with stale
// candidates and ties), ignore_merges, pre-tokenizer patterns and presets, special-token
// matching, and the default model's tokenizer against ids from llama.cpp, plus the time
// to encode 1 MB of English text (printed, never asserted).
#include <doctest/doctest.h>

#include <chrono>
#include <ctime>

#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_pretokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// A vocabulary with all 256 byte symbols (id = byte value), then `extra` pieces (ids
// 256, 257, ... in order) given as plain text and stored byte-level encoded.
struct TinyVocab {
  BpeConfig config;

  explicit TinyVocab(const std::vector<std::string>& extra) {
    for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)), TokenType::Normal);
    for (const std::string& text : extra) add(text, TokenType::Normal);
    config.source = "tiny test vocabulary";
  }
  TokenId add(const std::string& text, TokenType type) {
    config.pieces.push_back(type == TokenType::Normal ? byte_level_encode(text) : text);
    config.types.push_back(type);
    return static_cast<TokenId>(config.pieces.size() - 1);
  }
  void merge(const std::string& left, const std::string& right) {
    config.merges.emplace_back(byte_level_encode(left), byte_level_encode(right));
  }
  TokenId id_of(const std::string& text) const {
    for (size_t id = 0; id < config.pieces.size(); ++id) {
      if (config.pieces[id] == byte_level_encode(text)) return static_cast<TokenId>(id);
    }
    FAIL("no piece ", text);
    return 0;
  }
  BpeTokenizer build() const { return BpeTokenizer(config); }
};

std::vector<std::string> pieces_of(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string_view> views;
  pre.split(text, views);
  return {views.begin(), views.end()};
}

std::vector<std::string> preset_pieces(std::string_view name, std::string_view text) {
  return pieces_of(PreTokenizer(gguf_bpe_preset(name, "test").rules), text);
}

// About `num_bytes` of English-like prose: words drawn by a fixed LCG from a list, with
// punctuation, numbers and paragraphs, so it is the same on every run.
std::string english_text(size_t num_bytes) {
  static constexpr std::array<std::string_view, 48> kWords = {
      "the", "of",   "and",   "to",   "in",   "is",   "that", "for",   "it",    "as",        "was",   "with",
      "be",  "by",   "on",    "not",  "he",   "this", "are",  "or",    "his",   "from",      "at",    "which",
      "but", "have", "an",    "had",  "they", "you",  "were", "their", "one",   "all",       "we",    "can",
      "her", "has",  "there", "been", "if",   "more", "when", "will",  "would", "tokenizer", "Paged", "attention's"};
  std::string text;
  uint64_t state = 12345;
  while (text.size() < num_bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = state >> 33;
    text += kWords[r % kWords.size()];
    switch (r % 23) {
      case 0:
        text += ". ";
        break;
      case 1:
        text += ", ";
        break;
      case 2:
        text += " " + std::to_string(r % 10000) + " ";
        break;
      case 3:
        text += ".\n\n";
        break;
      default:
        text += ' ';
    }
  }
  return text;
}

}  // namespace

TEST_CASE("byte-level mapping: printable bytes stand for themselves, the rest from U+0100") {
  CHECK(byte_level_encode("A~!") == "A~!");
  CHECK(byte_level_encode(" ") == "\xC4\xA0");     // U+0120 'Ġ'
  CHECK(byte_level_encode("\n") == "\xC4\x8A");    // U+010A 'Ċ'
  CHECK(byte_level_encode("\xAD") == "\xC5\x83");  // U+0143, the last one
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  const std::string encoded = byte_level_encode(all_bytes);
  CHECK(utf8_is_valid(encoded));
  CHECK(byte_level_decode(encoded) == all_bytes);
}

TEST_CASE("merges apply lowest rank first; stale pairs are skipped") {
  TinyVocab vocab({"he", "ll", "lo", "hell", "hello"});
  vocab.merge("l", "l");     // rank 0
  vocab.merge("h", "e");     // rank 1
  vocab.merge("l", "o");     // rank 2: loses to "l l" inside "hello"
  vocab.merge("he", "ll");   // rank 3
  vocab.merge("hell", "o");  // rank 4
  const BpeTokenizer tokenizer = vocab.build();
  CHECK(tokenizer.num_merges() == 5);
  CHECK(tokenizer.encode("hello", false) == std::vector<TokenId>{vocab.id_of("hello")});
  CHECK(tokenizer.encode("lol", false) == std::vector<TokenId>{vocab.id_of("lo"), 'l'});
  CHECK(tokenizer.encode("hel", false) == std::vector<TokenId>{vocab.id_of("he"), 'l'});
  CHECK(tokenizer.decode(tokenizer.encode("hello lol", false), false) == "hello lol");
}

TEST_CASE("equal ranks merge leftmost first") {
  TinyVocab vocab({"aa"});
  vocab.merge("a", "a");
  const BpeTokenizer tokenizer = vocab.build();
  const TokenId aa = vocab.id_of("aa");
  CHECK(tokenizer.encode("aaa", false) == std::vector<TokenId>{aa, 'a'});
  CHECK(tokenizer.encode("aaaa", false) == std::vector<TokenId>{aa, aa});
  CHECK(tokenizer.encode("aaaaa", false) == std::vector<TokenId>{aa, aa, 'a'});
}

TEST_CASE("ignore_merges takes a word that is a token whole") {
  TinyVocab vocab({"he", "hello"});
  vocab.merge("h", "e");
  CHECK(vocab.build().encode("hello", false) == std::vector<TokenId>{vocab.id_of("he"), 'l', 'l', 'o'});
  vocab.config.ignore_merges = true;
  CHECK(vocab.build().encode("hello", false) == std::vector<TokenId>{vocab.id_of("hello")});
}

TEST_CASE("pre-tokenizer presets split like their tokenizer.json patterns") {
  CHECK(preset_pieces("gpt-2", "Hello world's  test\n") ==
        std::vector<std::string>{"Hello", " world", "'s", " ", " test", "\n"});
  // smollm/starcoder: single digits first, then GPT-2.
  CHECK(preset_pieces("smollm", "abc 123") == std::vector<std::string>{"abc", " ", "1", "2", "3"});
  CHECK(preset_pieces("starcoder", "x=42") == std::vector<std::string>{"x", "=", "4", "2"});
  CHECK(preset_pieces("llama-bpe", "abc 1234567 I'M") ==
        std::vector<std::string>{"abc", " ", "123", "456", "7", " I", "'M"});
  CHECK(preset_pieces("qwen2", "abc 12") == std::vector<std::string>{"abc", " ", "1", "2"});
  // o200k words: upper-case runs then lower-case ones, so camel case splits.
  CHECK(preset_pieces("gpt-4o", "parseJSONValue 12345") ==
        std::vector<std::string>{"parse", "JSONValue", " ", "123", "45"});
  CHECK(preset_pieces("tekken", "iPhone a/b") == std::vector<std::string>{"i", "Phone", " a", "/b"});
  CHECK(preset_pieces("deepseek-v3", "1234 中文abc") == std::vector<std::string>{"123", "4", " ", "中文", "abc"});
  CHECK(preset_pieces("superbpe", "x 1234567") == std::vector<std::string>{"x ", "1", "234", "567"});
  // llama.cpp's "default": punctuation runs split out first.
  CHECK(preset_pieces("default", "a+b==c 1234") == std::vector<std::string>{"a", "+", "b", "==", "c", " ", "123", "4"});
}

TEST_CASE("split rules: Removed, literal patterns, empty matches") {
  const PreTokenizer removed({{.pattern = "-", .literal = true, .behavior = SplitBehavior::Removed}});
  CHECK(pieces_of(removed, "a-b--c") == std::vector<std::string>{"a", "b", "c"});
  const PreTokenizer literal({{.pattern = "a.b", .literal = true}});
  CHECK(pieces_of(literal, "xa.bya_b") == std::vector<std::string>{"x", "a.b", "ya_b"});
  // An empty match cuts there, as HF tokenizers and llama.cpp do.
  const PreTokenizer empty_matches({{.pattern = "x*"}});
  CHECK(pieces_of(empty_matches, "abxxc") == std::vector<std::string>{"a", "b", "xx", "c"});
  const PreTokenizer thousands({{.pattern = R"((?=(\d{3})+(?!\d)))"}});
  CHECK(pieces_of(thousands, "x1234567") == std::vector<std::string>{"x1", "234", "567"});
  CHECK_THROWS_AS(PreTokenizer({{.pattern = "(unclosed"}}), Error);
}

TEST_CASE("an unknown tokenizer.ggml.pre is an Error naming it and the supported values") {
  try {
    gguf_bpe_preset("mystery-pre", "model.gguf");
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.find("model.gguf") != std::string::npos);
    CHECK(message.find("'mystery-pre'") != std::string::npos);
    CHECK(message.find("smollm") != std::string::npos);
    CHECK(message.find("llama-bpe") != std::string::npos);
  }
}

TEST_CASE("special tokens: control needs parse_special, user-defined always, longest first") {
  TinyVocab vocab({});
  const TokenId start = vocab.add("<s>", TokenType::Control);
  const TokenId start_user = vocab.add("<s>user", TokenType::Control);
  const TokenId tool = vocab.add("<tool>", TokenType::UserDefined);
  vocab.config.added_tokens = added_tokens_from_types(vocab.config.pieces, vocab.config.types);
  const BpeTokenizer tokenizer = vocab.build();

  CHECK(tokenizer.encode("<s>user<s>x", true) == std::vector<TokenId>{start_user, start, 'x'});
  CHECK(tokenizer.encode("<s>", false) == std::vector<TokenId>{'<', 's', '>'});
  CHECK(tokenizer.encode("a<tool>b", false) == std::vector<TokenId>{'a', tool, 'b'});
  CHECK(tokenizer.encode("a<tool>b", true) == std::vector<TokenId>{'a', tool, 'b'});
  CHECK(tokenizer.find_token("<s>user") == start_user);
  CHECK_FALSE(tokenizer.find_token("<nope>").has_value());
  // Control text only when rendered; user-defined always.
  const std::vector<TokenId> ids = {start, 'h', 'i', tool};
  CHECK(tokenizer.decode(ids, false) == "hi<tool>");
  CHECK(tokenizer.decode(ids, true) == "<s>hi<tool>");
}

TEST_CASE("added-token matcher: lstrip and rstrip swallow neighbouring whitespace") {
  const AddedTokenMatcher matcher({{.text = "<m>", .id = 7, .special = true, .lstrip = true, .rstrip = true}});
  const auto fragments = matcher.split("a  <m> \n b", true);
  REQUIRE(fragments.size() == 3);
  CHECK(fragments[0].text == "a");
  CHECK(fragments[1].token == 7);
  CHECK(fragments[2].text == "b");
  CHECK(matcher.split("a <m> b", false).size() == 1);
}

TEST_CASE("default model: special tokens and ids from llama.cpp") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh places it)");
    return;
  }
  const GgufFile gguf(*model);
  const auto tokenizer = load_tokenizer(gguf);
  REQUIRE(dynamic_cast<const BpeTokenizer*>(tokenizer.get()) != nullptr);
  CHECK(tokenizer->vocab_size() == 49152);

  const SpecialTokens& special = tokenizer->special();
  CHECK(special.bos == 1);  // <|im_start|>
  CHECK(special.eos == 2);  // <|im_end|>
  CHECK(special.eot == 2);
  CHECK(special.unk == 0);
  CHECK(special.pad == 2);
  CHECK_FALSE(special.add_bos);
  CHECK(tokenizer->is_end_of_generation(2));
  CHECK(tokenizer->is_end_of_generation(0));  // <|endoftext|>
  CHECK_FALSE(tokenizer->is_end_of_generation(1));
  CHECK(tokenizer->find_token("<|im_start|>") == 1);
  CHECK(tokenizer->find_token("<|im_end|>") == 2);

  // Reference ids: llama-cpp-python 0.3.x tokenize(add_bos=False, special=True/False).
  CHECK(tokenizer->encode("<|im_start|>user", true) == std::vector<TokenId>{1, 4093});
  CHECK(tokenizer->encode("<|im_start|>user", false) == std::vector<TokenId>{44, 108, 306, 79, 3738, 108, 46, 4093});
  CHECK(tokenizer->encode("<|im_start|>user\nHello<|im_end|>\n", true) ==
        std::vector<TokenId>{1, 4093, 198, 19556, 2, 198});
  CHECK(tokenizer->encode("<repo_name>x", true) == std::vector<TokenId>{3, 104});
  CHECK(tokenizer->encode("Hello \xF0\x9F\xA6\x99 world \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C 1234567",
                          false) == std::vector<TokenId>{19556, 15107, 116,  243, 905, 216, 18645, 250,
                                                         48392, 138,   7906, 240, 178, 239, 230,   216,
                                                         33,    34,    35,   36,  37,  38,  39});
  CHECK(tokenizer->encode("  leading\n\n  spaces\t\ttabs", false) ==
        std::vector<TokenId>{216, 2899, 8866, 5600, 197, 197, 100, 7366});

  const std::vector<TokenId> chat = {1, 4093, 198, 19556, 2, 198};
  CHECK(tokenizer->decode(chat, true) == "<|im_start|>user\nHello<|im_end|>\n");
  CHECK(tokenizer->decode(chat, false) == "user\nHello\n");
  CHECK(tokenizer->piece(216) == "\xC4\xA0");  // "Ġ"
}

TEST_CASE("default model: very long whitespace runs and words encode and decode back") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh places it)");
    return;
  }
  const GgufFile gguf(*model);
  const auto tokenizer = load_tokenizer(gguf);
  // Long runs stress the regex engine (backtracking over "\s+(?!\S)") and the merge heap.
  std::string spaces = "a";
  spaces.append(200000, ' ').append("b");
  std::string newlines(50000, '\n');
  newlines.append("end");
  for (const std::string& text : {spaces, std::string(300000, 'x'), newlines}) {
    const std::vector<TokenId> ids = tokenizer->encode(text, false);
    CHECK(!ids.empty());
    CHECK(ids.size() < text.size());
    CHECK(tokenizer->decode(ids, false) == text);
  }
}

TEST_CASE("default model: encoding 1 MB of English text (time printed, not asserted)") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh places it)");
    return;
  }
  const GgufFile gguf(*model);
  const auto tokenizer = load_tokenizer(gguf);
  const std::string text = english_text(1 << 20);
  // CPU time as well as wall time: the build machine is often shared.
  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TokenId> ids = tokenizer->encode(text, false);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  MESSAGE("encoded ", text.size(), " bytes into ", ids.size(), " tokens in ", seconds * 1000.0, " ms wall, ",
          cpu_seconds * 1000.0, " ms CPU (", text.size() / seconds / 1e6, " MB/s wall)");
  CHECK(tokenizer->decode(ids, false) == text);
}
