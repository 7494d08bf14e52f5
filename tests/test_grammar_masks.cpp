// Token masks on small hand-made vocabularies, step by step, with every expected token
// worked out by hand: multi-byte UTF-8 split over tokens, tokens that cross several JSON
// syntax elements (and rule boundaries), the same token allowed or not depending on the
// stack, and end-of-generation only when the value is complete. Every mask is also
// checked against trying each token on a copy of the matcher.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "test_grammar_support.h"

namespace pagedgen {
namespace {

// Checks the mask against the expected ids and the brute-force reference, then accepts `next`.
void expect_then_accept(GrammarMatcher& matcher, const std::vector<TokenId>& expected, std::optional<TokenId> next) {
  const std::vector<TokenId> allowed = test::allowed_ids(matcher);
  CHECK(allowed == expected);
  CHECK(allowed == test::brute_force_ids(matcher));
  if (next) REQUIRE(matcher.accept_token(*next));
}

TEST_CASE("object with a bounded string and an enum array: exact masks at every step") {
  const std::vector<std::string> vocab = {
      "<eos>",
      "{",
      "{\"",
      "\"",
      "name",
      "\":",
      "\":\"",
      "a",
      "\xC3\xA9",
      "\xC3",
      "\xA9",  // 0-10
      "\",",
      "\",\"",
      "tags",
      "[",
      "[\"",
      "x",
      "yz",
      "\"]",
      "\"]}",
      ",",
      "]",
      "}",  // 11-22
      "\"name\":\"",
      "] }",
      "\\",
      "n",
      "\xE2\x82\xAC",
      "\xE2\x82",
      "\xAC",
      "\"x\"",
      "y",                // 23-31
      "\",\"tags\":[\"",  // 32
  };
  const auto grammar = test::compile_for(json_schema_grammar(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 3},
      "tags": {"type": "array", "items": {"enum": ["x", "yz"]}, "maxItems": 2}},
      "required": ["name", "tags"]})"),
                                         vocab);
  GrammarMatcher m(grammar);
  expect_then_accept(m, {1, 2}, 2);     // {"
  expect_then_accept(m, {4, 26}, 4);    // {"name
  expect_then_accept(m, {3, 5, 6}, 6);  // {"name":"
  // Inside the string, nothing written yet: any content of at most 3 characters, a lone
  // lead byte, an escape, or a closing quote followed by what the object allows next.
  expect_then_accept(m, {1, 2, 3, 7, 8, 9, 11, 12, 14, 15, 16, 17, 20, 21, 22, 24, 25, 26, 27, 28, 31, 32}, 7);  // "a
  expect_then_accept(m, {1, 2, 3, 7, 8, 9, 11, 12, 14, 15, 16, 17, 20, 21, 22, 25, 26, 27, 28, 31, 32}, 9);  // "a\xC3
  expect_then_accept(m, {10, 29}, 10);  // only continuation bytes: "aé
  // Two characters written: one more at most ("yz" and "] }" no longer fit).
  expect_then_accept(m, {1, 2, 3, 7, 8, 9, 11, 12, 14, 15, 16, 20, 21, 22, 25, 26, 27, 28, 31, 32}, 27);  // "aé€
  expect_then_accept(m, {3, 11, 12, 32}, 12);      // full: only a closing quote; then ,"
  expect_then_accept(m, {13}, 13);                 // tags
  expect_then_accept(m, {3, 5}, 5);                // ":
  expect_then_accept(m, {14, 15}, 15);             // ["
  expect_then_accept(m, {16, 17, 31}, 16);         // "x
  expect_then_accept(m, {3, 11, 12, 18, 19}, 12);  // one item: ',' or ']' may follow
  expect_then_accept(m, {16, 17, 31}, 17);         // "yz
  expect_then_accept(m, {3, 18, 19}, 19);          // maxItems reached: ']' only, then '}'
  expect_then_accept(m, {0}, 0);                   // complete: end of generation only
  CHECK(m.is_terminated());
  expect_then_accept(m, {}, std::nullopt);
}

TEST_CASE("one string rule in two contexts: a token past its end is checked on the real stack") {
  const std::vector<std::string> vocab = {"<eos>",        "{\"a\":\"", "q",    "\"]", "\",",
                                          "\",\"b\":[\"", "\"}",       "\"]}", "\"",  ",\""};
  const auto grammar = test::compile_for(json_schema_grammar(R"({"type": "object", "properties": {
      "a": {"type": "string"}, "b": {"type": "array", "items": {"type": "string"}}}, "required": ["a", "b"]})"),
                                         vocab);
  GrammarMatcher m(grammar);
  expect_then_accept(m, {1}, 1);
  // In "a": '"]' would close an array that is not open, '"}' would skip the required "b".
  expect_then_accept(m, {2, 4, 5, 8, 9}, 5);
  // In an item of "b", the same string rule: now '"]' and '"]}' close the array and object.
  expect_then_accept(m, {2, 3, 4, 7, 8, 9}, 2);
  expect_then_accept(m, {2, 3, 4, 7, 8, 9}, 7);
  expect_then_accept(m, {0}, std::nullopt);
}

TEST_CASE("a complete value that may go on: end of generation beside the continuations") {
  const std::vector<std::string> vocab = {"<eos>", "1", "12", "}", "-", "<|im_end|>"};
  const auto grammar =
      std::make_shared<const CompiledGrammar>(json_schema_grammar(R"({"type": "integer", "maximum": 19})"), [&] {
        TokenVocabulary v;
        for (const std::string& text : vocab)
          v.bytes_by_id.push_back(text == "<eos>" || text == "<|im_end|>" ? "" : text);
        v.end_of_generation = {0, 5};  // every end-of-generation id is allowed at the end
        return std::make_shared<const TokenTrie>(std::move(v));
      }());
  GrammarMatcher m(grammar);
  expect_then_accept(m, {1, 2, 4}, 1);
  CHECK(m.is_complete());
  expect_then_accept(m, {0, 1, 5}, 1);  // 11 may still be followed by nothing: 110 > 19
  expect_then_accept(m, {0, 5}, std::nullopt);
  CHECK_FALSE(m.accept_token(1));  // refused: the matcher stays where it was
  expect_then_accept(m, {0, 5}, 5);
  CHECK(m.is_terminated());
  CHECK_FALSE(m.accept_token(0));
}

TEST_CASE("tokens without text and tokens out of range are never allowed") {
  const std::vector<std::string> vocab = {"<eos>", "", "{", "}", "{}"};
  const auto grammar = test::compile_for(json_object_grammar(), vocab);
  GrammarMatcher m(grammar);
  expect_then_accept(m, {2, 4}, std::nullopt);
  CHECK_FALSE(m.accept_token(1));
  CHECK_FALSE(m.accept_token(-1));
  CHECK_FALSE(m.accept_token(5));
  CHECK_FALSE(m.accept_token(0));  // not complete yet
  expect_then_accept(m, {2, 4}, 2);
  expect_then_accept(m, {3}, 3);
  expect_then_accept(m, {0}, std::nullopt);
}

TEST_CASE("one token spanning a whole nested value, and masks of every width") {
  // Token 1 writes a whole object through three rule calls at once; token 2 stops halfway
  // into a key; tokens 3-5 are 4-byte UTF-8 split 1+3, 2+2 and 3+1.
  const std::vector<std::string> vocab = {"<eos>",
                                          "{\"k\":[{\"k\":[]}]}",
                                          "{\"k\":[{\"",
                                          "\xF0",
                                          "\xF0\x9F",
                                          "\xF0\x9F\x98",
                                          "\x9F\x98\x80",
                                          "\x98\x80",
                                          "\x80",
                                          "\"",
                                          "k",
                                          "\":[",
                                          "]",
                                          "}",
                                          "{\"k\":[\""};
  const auto grammar = test::compile_for(json_schema_grammar(R"({"$defs": {"n": {"type": "object",
      "properties": {"k": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "string"}]}}}, "required": ["k"]}},
      "$ref": "#/$defs/n"})"),
                                         vocab);
  {
    GrammarMatcher m(grammar);
    expect_then_accept(m, {1, 2, 14}, 1);
    expect_then_accept(m, {0}, std::nullopt);
  }
  // After each split, the continuations that fit (F0 takes 90..BF first, then any
  // 80..BF), and the one that completes U+1F600.
  struct Split {
    TokenId lead;
    std::vector<TokenId> continuations;
    TokenId completing;
  };
  for (const auto& [split, continuations, completing] : {Split{3, {6, 7}, 6}, Split{4, {7, 8}, 7}, Split{5, {8}, 8}}) {
    GrammarMatcher m(grammar);
    expect_then_accept(m, {1, 2, 14}, 14);
    // String content: "k", "]" and "}" are text here; '"' closes it, so '":[' cannot.
    expect_then_accept(m, {3, 4, 5, 9, 10, 12, 13}, split);
    expect_then_accept(m, continuations, completing);
    expect_then_accept(m, {3, 4, 5, 9, 10, 12, 13}, 9);
    expect_then_accept(m, {12}, 12);
    expect_then_accept(m, {13}, 13);
    expect_then_accept(m, {0}, std::nullopt);
  }
}

}  // namespace
}  // namespace pagedgen
