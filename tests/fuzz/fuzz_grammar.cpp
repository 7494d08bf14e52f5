// The grammar fuzz targets' shared checks (fuzz_grammar.h): the small vocabulary, built
// once per process, and the checked walk.
#include "fuzz_grammar.h"

#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/token_bitmask.h"

namespace pagedgen::fuzz {

namespace {

[[noreturn]] void finding(const char* what, int step) {
  std::fprintf(stderr, "grammar finding: %s (step %d)\n", what, step);
  std::abort();
}

// Tokens that cross JSON syntax, split UTF-8 or spell common keys, as the random-walk
// test's vocabulary has.
// clang-format off
constexpr const char* kMultiByteTokens[] = {
    "{\"", "\":", "\":\"", "\",", "\",\"", "\"}", "\"]", "\"]}", "},", "},{\"", "]}", "[{\"", "[\"",
    "true", "false", "null", "0", "12", "-3", ".5", "e+", "E-", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F",
    "\x98\x80", "\\u00", "\\n", "\\\"", " the", "abc", "name", "\"name\":\"", "id", "\":1", "items",
    "\":[", "}]}", "42,", "42]", ",true", "null}", "null,", "\"a\":", "\"p0\":", "\"d0\":", "1e", "-0.",
    "9999999999999999999", "\"\"", "{}", "[]"};
// clang-format on

// Every byte (ids 0-255), an end-of-generation token (256), then kMultiByteTokens.
TokenVocabulary small_vocabulary() {
  TokenVocabulary vocabulary;
  for (int b = 0; b < 256; ++b) vocabulary.bytes_by_id.emplace_back(1, static_cast<char>(b));
  vocabulary.bytes_by_id.emplace_back();
  vocabulary.end_of_generation.push_back(256);
  for (const char* text : kMultiByteTokens) vocabulary.bytes_by_id.emplace_back(text);
  return vocabulary;
}

const std::shared_ptr<const TokenTrie>& small_trie() {
  static const std::shared_ptr<const TokenTrie> trie = std::make_shared<const TokenTrie>(small_vocabulary());
  return trie;
}

std::vector<TokenId> allowed_ids(GrammarMatcher& matcher, std::vector<uint32_t>& mask) {
  matcher.fill_next_token_mask(mask);
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < matcher.grammar().vocabulary().size(); ++id)
    if (token_allowed(mask, id)) ids.push_back(id);
  return ids;
}

// The reference for allowed_ids: each token tried on its own copy of the matcher.
std::vector<TokenId> brute_force_ids(const GrammarMatcher& matcher) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < matcher.grammar().vocabulary().size(); ++id) {
    GrammarMatcher copy = matcher;
    if (copy.accept_token(id)) ids.push_back(id);
  }
  return ids;
}

void check_finished_text(const std::string& text, int step) {
  static simdjson::dom::parser parser;
  simdjson::dom::element value;
  if (parser.parse(text).get(value) != simdjson::SUCCESS) finding("a finished text is not JSON", step);
}

}  // namespace

std::shared_ptr<const CompiledGrammar> compile_for_small_vocabulary(Grammar grammar) {
  return std::make_shared<const CompiledGrammar>(std::move(grammar), small_trie());
}

std::optional<std::string> check_walk(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view choices,
                                      int max_steps, int max_checked_steps, FinishedText finished) {
  GrammarMatcher matcher(grammar);
  std::vector<uint32_t> mask(token_mask_words(grammar->vocabulary().size()));
  std::string text;
  for (int step = 0; step < max_steps && !matcher.is_terminated(); ++step) {
    const std::vector<TokenId> allowed = allowed_ids(matcher, mask);
    if (allowed.empty()) finding("no token allowed before the end", step);
    if (step < max_checked_steps && allowed != brute_force_ids(matcher))
      finding("a mask differs from trying every token", step);
    const uint8_t choice = choices.empty() ? 0 : static_cast<uint8_t>(choices[step % choices.size()]);
    // The end token when the input says so and it is allowed, so that some walks finish.
    const bool end = choice % 4 == 0 && matcher.is_complete();
    const TokenId token =
        end ? grammar->vocabulary().end_of_generation[0] : allowed[(choice + step * 131u) % allowed.size()];
    if (!matcher.accept_token(token)) finding("an allowed token was refused", step);
    if (matcher.is_terminated() && finished == FinishedText::kJson) check_finished_text(text, step);
    if (matcher.is_terminated()) return text;
    text += grammar->vocabulary().bytes_by_id[static_cast<size_t>(token)];
  }
  return std::nullopt;
}

}  // namespace pagedgen::fuzz
