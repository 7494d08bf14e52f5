// GBNF to grammars: the texts rules, literals, classes, groups and repetitions admit (fed
// byte by byte), rules that match the empty text, recursion, and the errors and refusals
// with where they are.
#include <doctest/doctest.h>

#include <string>

#include "grammar/gbnf_grammar.h"
#include "grammar/grammar_error.h"
#include "test_grammar_support.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using test::byte_matches;
using test::contains;

std::shared_ptr<const CompiledGrammar> gbnf(std::string_view text) {
  return test::compile_for(gbnf_grammar(text), test::byte_vocabulary());
}

std::string gbnf_refusal(std::string_view text) {
  return test::refusal_message([&] { return gbnf_grammar(text); });
}

TEST_CASE("GBNF rules, literals, classes and repetitions") {
  const auto list = gbnf(R"(# a list of items
root ::= "[" ws ( item ( "," ws item )* )? ws "]"
item ::= [a-z]+ | num
num  ::= "-"? [0-9]{1,3}
ws   ::= [ \t\n]*
)");
  for (const char* yes : {"[]", "[ ]", "[abc]", "[a, -12,\n\tb]", "[ 999 ]"}) CHECK(byte_matches(list, yes));
  for (const char* no : {"[", "[a,]", "[1234]", "[A]", "[a b]", " []"}) CHECK_FALSE(byte_matches(list, no));

  const auto unicode = gbnf(R"(root ::= "caf\u00e9 " [^\x00-\x7F]{2} "\U0001F600" .)");
  CHECK(byte_matches(unicode, "caf\xC3\xA9 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80x"));
  CHECK_FALSE(byte_matches(unicode, "caf\xC3\xA9 ab\xF0\x9F\x98\x80x"));

  // A body ends where the next definition starts, on whatever line.
  const auto lines = gbnf("root ::= a\n  | b b ::= \"y\"\na ::= \"x\"{2,} (\"!\" | )");
  for (const char* yes : {"xx", "xxx!", "y"}) CHECK(byte_matches(lines, yes));
  for (const char* no : {"x", "x!", "yy", ""}) CHECK_FALSE(byte_matches(lines, no));
}

TEST_CASE("GBNF rules that match the empty text, and recursion") {
  const auto empty_root = gbnf(R"g(root ::= "a"* | "")g");
  CHECK(byte_matches(empty_root, ""));
  CHECK(byte_matches(empty_root, "aaa"));
  CHECK_FALSE(byte_matches(empty_root, "b"));

  // Nested parentheses, the nullable `ws` called first and last.
  const auto nested = gbnf(R"g(root ::= ws expr ws
expr ::= "(" ws expr? ws ")" | [0-9]
ws ::= " "*)g");
  for (const char* yes : {"1", " ( 1 ) ", "(())", "((( 7)))", "()"}) CHECK(byte_matches(nested, yes));
  for (const char* no : {"(", "(1", "1)", "(12)", ""}) CHECK_FALSE(byte_matches(nested, no));

  // The start rule called again from inside: its non-empty version is what is called.
  const auto self = gbnf(R"g(root ::= ( "<" root ">" )*)g");
  for (const char* yes : {"", "<>", "<<>><>"}) CHECK(byte_matches(self, yes));
  CHECK_FALSE(byte_matches(self, "<<>"));
}

TEST_CASE("GBNF errors and refusals say what and where") {
  CHECK(contains(gbnf_refusal("root ::= \"a\" b"), "uses rule 'b' but never defines it"));
  CHECK(contains(gbnf_refusal("start ::= \"a\""), "has no rule 'root'"));
  CHECK(contains(gbnf_refusal("root ::= \"a\"\nroot ::= \"b\""), "line 2, column 9: rule 'root' is defined twice"));
  CHECK(contains(gbnf_refusal("root ::= \"a"), "a literal is not closed"));
  CHECK(contains(gbnf_refusal("root ::= [a"), "a class is not closed"));
  CHECK(contains(gbnf_refusal("root ::= (\"a\""), "a group is not closed"));
  CHECK(contains(gbnf_refusal("root ::= \"a\" )"), "')' closes no group"));
  CHECK(contains(gbnf_refusal("root = \"a\""), "expected '::=' after 'root'"));
  CHECK(contains(gbnf_refusal("root ::= * \"a\""), "a repetition with nothing to repeat"));
  CHECK(contains(gbnf_refusal("root ::= \"a\"{3,2}"), "n below m"));
  CHECK(contains(gbnf_refusal(R"(root ::= "\q")"), "unknown escape '\\q'"));
  CHECK(contains(gbnf_refusal(R"(root ::= "\uD800")"), "U+D800 is no character"));
  CHECK(contains(gbnf_refusal("root ::= <think>"), "unsupported: the grammar uses a token reference"));
  CHECK(contains(gbnf_refusal("root ::= root \"a\" | \"b\""), "root: the rule can call itself again before any text"));
  CHECK(contains(gbnf_refusal("root ::= a\na ::= \"x\" a"), "no text matches the grammar"));
  CHECK(contains(gbnf_refusal("root ::= \"a\"{1000000}"), "unsupported: the grammar repeats a piece"));
  CHECK(contains(gbnf_refusal("root ::= ((\"ab\"{100}){100}){100}"), "unsupported: the grammar"));
}

TEST_CASE("GBNF nesting and rule chains deepen no C++ stack") {
  std::string deep = "root ::= ";
  for (int i = 0; i < 100000; ++i) deep += "(";
  deep += "\"x\"";
  for (int i = 0; i < 100000; ++i) deep += ")";
  CHECK(byte_matches(gbnf(deep), "x"));

  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 20000; ++i) chain += fmt::format("r{} ::= r{} \"a\"\n", i, i + 1);
  chain += "r20000 ::= \"b\"\n";
  CHECK(byte_matches(gbnf(chain), "b" + std::string(20000, 'a')));
}

}  // namespace
}  // namespace pagedgen

namespace pagedgen {
namespace {

TEST_CASE("GBNF masks over tokens that cross rules, skipped empty rules and UTF-8 equal trying every token") {
  const std::vector<std::string> texts = {"<eos>", " ", "  ", "a",  "ab", "b",  "\xC3", "\xA9", "\xC3\xA9", "é ",
                                          " a",    "(", "()", "((", ")",  ") ", ",",    ", ",   "x",        "é,"};
  const auto grammar = test::compile_for(gbnf_grammar(R"g(root ::= ws item ( "," ws item )* ws
item ::= "ab" | "é" ws | "(" ws root? ")" | ""
ws ::= " "*)g"),
                                         texts);
  // Every walk takes, at each step, the allowed token picked by a fixed stride.
  for (size_t stride = 1; stride < 8; ++stride) {
    GrammarMatcher matcher(grammar);
    for (size_t step = 0; step < 12 && !matcher.is_terminated(); ++step) {
      const std::vector<TokenId> allowed = test::allowed_ids(matcher);
      REQUIRE(allowed == test::brute_force_ids(matcher));
      REQUIRE_FALSE(allowed.empty());
      REQUIRE(matcher.accept_token(allowed[(step * stride + stride) % allowed.size()]));
    }
  }
}

}  // namespace
}  // namespace pagedgen
