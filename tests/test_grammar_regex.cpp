// Regexes and choices to grammars: the texts each construct admits (fed byte by byte, one
// token per byte, and as multi-byte tokens whose masks are checked against trying every
// token), the empty text, and the refusals of what cannot be enforced or passes the caps.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "grammar/grammar_error.h"
#include "grammar/json_grammar.h"
#include "grammar/regex_grammar.h"
#include "test_grammar_support.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using test::byte_matches;
using test::contains;

std::shared_ptr<const CompiledGrammar> regex(std::string_view pattern) {
  return test::compile_for(regex_grammar(pattern), test::byte_vocabulary());
}

std::string regex_refusal(std::string_view pattern) {
  return test::refusal_message([&] { return regex_grammar(pattern); });
}

TEST_CASE("regex literals, classes and escapes match whole texts") {
  const auto digits = regex(R"(\d{3}-\d{4})");
  CHECK(byte_matches(digits, "555-1234"));
  CHECK_FALSE(byte_matches(digits, "555-123"));
  CHECK_FALSE(byte_matches(digits, "555-12345"));
  CHECK_FALSE(byte_matches(digits, "a55-1234"));

  const auto cls = regex("[a-cx-z_]+");
  CHECK(byte_matches(cls, "abz_x"));
  CHECK_FALSE(byte_matches(cls, ""));
  CHECK_FALSE(byte_matches(cls, "abd"));

  const auto negated = regex(R"([^"\n]*)");
  CHECK(byte_matches(negated, ""));
  CHECK(byte_matches(negated, "caf\xC3\xA9 \xF0\x9F\x98\x80"));  // "café 😀": any character but " and \n
  CHECK_FALSE(byte_matches(negated, "a\"b"));
  CHECK_FALSE(byte_matches(negated, "a\nb"));
  CHECK_FALSE(byte_matches(negated, "\xC3"));  // half a character never completes

  const auto word_space = regex(R"(\w+\s\W)");
  CHECK(byte_matches(word_space, "ab_9\t!"));
  CHECK(byte_matches(word_space, "x\xE3\x80\x80\xC3\xA9"));  // U+3000 is \s, é is \W
  CHECK_FALSE(byte_matches(word_space, "x !!"));

  const auto dot = regex("a.c");
  CHECK(byte_matches(dot, "abc"));
  CHECK(byte_matches(dot,
                     "a\xE2\x82\xAC"
                     "c"));  // a€c
  CHECK_FALSE(byte_matches(dot, "a\nc"));
  CHECK_FALSE(byte_matches(dot,
                           "a\xE2\x80\xA8"
                           "c"));  // U+2028 is a line terminator

  const auto escapes = regex(R"(\u00e9\x41\t\.\(\)\[\]\{\}\|\\\/\$\^\*\+\?\uD83D\uDE00)");
  CHECK(byte_matches(escapes,
                     "\xC3\xA9"
                     "A\t.()[]{}|\\/$^*+?\xF0\x9F\x98\x80"));
}

TEST_CASE("regex quantifiers, alternation, groups and anchors") {
  const auto bounded = regex("(ab){2,3}c?");
  CHECK(byte_matches(bounded, "abab"));
  CHECK(byte_matches(bounded, "ababab"));
  CHECK(byte_matches(bounded, "abababc"));
  CHECK_FALSE(byte_matches(bounded, "ab"));
  CHECK_FALSE(byte_matches(bounded, "abababab"));

  const auto at_least = regex("x{2,}");
  CHECK_FALSE(byte_matches(at_least, "x"));
  CHECK(byte_matches(at_least, "xx"));
  CHECK(byte_matches(at_least, "xxxxxxx"));

  const auto lazy = regex("a+?b*?(?:c|d)??");
  CHECK(byte_matches(lazy, "a"));
  CHECK(byte_matches(lazy, "aabbd"));
  CHECK_FALSE(byte_matches(lazy, "b"));

  const auto alternation = regex("^(?<kind>cat|dog)s?$|bird|");
  for (const char* yes : {"cat", "dogs", "bird", ""}) CHECK(byte_matches(alternation, yes));
  for (const char* no : {"cats!", "birds", "do"}) CHECK_FALSE(byte_matches(alternation, no));

  CHECK(byte_matches(regex("a{,2}"), "a{,2}"));              // not a quantifier: literal braces (Annex B)
  CHECK(contains(regex_refusal("[]a]"), "no text matches the regex"));  // [] is a class of no character
  CHECK(byte_matches(regex("[\\]a]+"), "]a"));
  CHECK(byte_matches(regex("[\\d-z]+"), "1-z"));  // '-' after a class escape is literal
}

TEST_CASE("regex refusals name the feature; malformed patterns are errors") {
  CHECK(contains(regex_refusal(R"((a)\1)"), "unsupported: the regex uses a backreference"));
  CHECK(contains(regex_refusal("a(?=b)"), "unsupported: the regex uses lookaround"));
  CHECK(contains(regex_refusal("a(?<!b)"), "unsupported: the regex uses lookaround"));
  CHECK(contains(regex_refusal(R"(\bword)"), "unsupported: the regex uses a word boundary"));
  CHECK(contains(regex_refusal(R"(\p{L})"), "unsupported: the regex uses a Unicode property"));
  CHECK(contains(regex_refusal("a^b"), "unsupported: the regex uses an anchor"));
  CHECK(contains(regex_refusal(R"(\uD800)"), "unsupported: the regex uses a lone surrogate"));
  CHECK(contains(regex_refusal("(ab"), "malformed at offset 3: a group is not closed"));
  CHECK(contains(regex_refusal("ab)"), "malformed at offset 2: ')' closes no group"));
  CHECK(contains(regex_refusal("*a"), "a quantifier with nothing to repeat"));
  CHECK(contains(regex_refusal("a{3,2}"), "m below n"));
  CHECK(contains(regex_refusal("[b-a]"), "a class range out of order"));
  CHECK(contains(regex_refusal("[ab"), "a class is not closed"));
  CHECK(contains(regex_refusal(R"(\q)"), "unknown escape \\q"));
  CHECK(contains(regex_refusal("[^\\s\\S]"), "no text matches the regex"));
}

TEST_CASE("regex bounds past the automaton's caps are refused naming the cap") {
  CHECK(contains(regex_refusal("a{1000000}"), "unsupported: the regex repeats a piece of 2 states 1000000 times"));
  CHECK(contains(regex_refusal("a{1000000}"), "262144"));
  CHECK(contains(regex_refusal("((a{100}){100}){100}"), "unsupported: the regex"));
  CHECK(contains(regex_refusal("(a|b)*a(a|b){20}"), "deterministic automaton states"));
  CHECK(regex_refusal("[0-9]{1,300}") == "(accepted)");
}

TEST_CASE("regex masks over multi-byte tokens equal trying every token") {
  const std::vector<std::string> texts = {"<eos>",    "1",         "12", "2-", "-3", "ab", "\xC3",    "\xA9",
                                          "\xC3\xA9", "\xC3\xA9x", "x",  "9",  "-",  "x9", "\xE2\x82"};
  const auto grammar = test::compile_for(regex_grammar(R"(\d{1,3}(-\d)?|(é|x)+9?)"), texts);
  const std::vector<std::vector<TokenId>> walks = {{1, 4}, {2, 12, 11}, {8, 10}, {6, 7, 9, 11}, {10, 13}};
  for (const auto& walk : walks) {
    GrammarMatcher matcher(grammar);
    for (const TokenId token : walk) {
      CHECK(test::allowed_ids(matcher) == test::brute_force_ids(matcher));
      REQUIRE(matcher.accept_token(token));
    }
    CHECK(test::allowed_ids(matcher) == test::brute_force_ids(matcher));
    CHECK(matcher.is_complete());
  }
}

TEST_CASE("choices: exactly one of the texts, shared prefixes and the empty text") {
  const std::vector<std::string> choices = {"yes", "yesterday", "no", "", "caf\xC3\xA9"};
  const auto grammar = test::compile_for(choice_grammar(choices), test::byte_vocabulary());
  for (const auto& c : choices) CHECK(byte_matches(grammar, c));
  for (const char* no : {"ye", "yess", "n", "caf", "noyes"}) CHECK_FALSE(byte_matches(grammar, no));

  std::string message;
  try {
    (void)choice_grammar(std::vector<std::string>{});
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message == "the list of choices is empty; give at least one");

  std::vector<std::string> many;
  for (int i = 0; i < 100000; ++i) many.push_back("choice " + std::to_string(i) + " of many");
  message.clear();
  try {
    (void)choice_grammar(many);
  } catch (const UnsupportedSchemaError& e) {
    message = e.what();
  }
  CHECK(message ==
        "the choices needs more than 262144 automaton states (large repeat bounds, long or very many "
        "alternatives); make it smaller");
}

TEST_CASE("JSON Schema pattern: unanchored over the decoded value, written with JSON escapes") {
  const auto schema = [](std::string_view text) {
    return test::compile_for(json_schema_grammar(text), test::byte_vocabulary());
  };
  const auto anchored = schema(R"({"type": "string", "pattern": "^[a-z]{2,3}$"})");
  CHECK(byte_matches(anchored, R"("ab")"));
  CHECK(byte_matches(anchored, R"("abc")"));
  CHECK_FALSE(byte_matches(anchored, R"("abcd")"));
  CHECK_FALSE(byte_matches(anchored, R"("a")"));

  // Unanchored: any text around a match; the quote and the newline in the value escaped.
  const auto search = schema(R"({"type": "string", "pattern": "\\d\"\n"})");
  CHECK(byte_matches(search, R"("7\"\n")"));
  CHECK(byte_matches(search, R"("x 7\"\n y")"));
  CHECK_FALSE(byte_matches(search, "\"7\"\n\""));       // a raw quote ends the string
  CHECK_FALSE(byte_matches(search, "\"7\\\"\n\""));     // a raw newline is no JSON
  CHECK_FALSE(byte_matches(search, R"("7\u0022\n")"));  // one spelling per character: \" only
  CHECK_FALSE(byte_matches(search, R"("x")"));

  // Only the start pinned; a multi-byte character; lengths count characters.
  const auto start = schema(R"({"type": "string", "pattern": "^caf\u00e9", "maxLength": 6})");
  CHECK(byte_matches(start, "\"caf\xC3\xA9\""));
  CHECK(byte_matches(start, "\"caf\xC3\xA9!\xE2\x82\xAC\""));
  CHECK_FALSE(byte_matches(start, "\"caf\xC3\xA9!!!\""));
  CHECK_FALSE(byte_matches(start, "\"xcaf\xC3\xA9\""));
  const auto lengths = schema(R"({"type": "string", "pattern": "b$", "minLength": 3})");
  CHECK(byte_matches(lengths, R"("\tab")"));
  CHECK_FALSE(byte_matches(lengths, R"("ab")"));
}

}  // namespace
}  // namespace pagedgen
