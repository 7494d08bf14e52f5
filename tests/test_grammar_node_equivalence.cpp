// Nodes no token can tell apart share one classification: exact classes on a hand-built
// counter, and on a counted string the merged positions still give every mask exactly
// (checked against trying each token on a copy of the matcher, up to the length limit).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/grammar_builder.h"
#include "grammar/json_grammar.h"
#include "grammar/node_equivalence.h"
#include "test_grammar_support.h"

namespace pagedgen {
namespace {

TEST_CASE("a counter: positions with room for the longest token are one class") {
  // n0 -a-> n1 -a-> ... -a-> n6, n1..n6 final: n_i takes up to 6 - i more a's.
  GrammarBuilder builder;
  const RuleId rule = builder.add_rule("counter");
  std::vector<GrammarNodeId> n{builder.rule_start(rule)};
  for (int i = 1; i <= 6; ++i) {
    n.push_back(builder.add_node(rule));
    builder.add_byte(n[static_cast<size_t>(i - 1)], 'a', n.back());
    builder.set_final(n.back());
  }
  const Grammar grammar = builder.finish(rule);
  // Tokens of up to 2 bytes: n1..n4 all take "a" and "aa" and may end; n5 only "a".
  CHECK(equivalent_nodes(grammar, 2) == std::vector<GrammarNodeId>{0, 1, 1, 1, 1, 5, 6});
  CHECK(equivalent_nodes(grammar, 3) == std::vector<GrammarNodeId>{0, 1, 1, 1, 4, 5, 6});
  CHECK(equivalent_nodes(grammar, 9) == std::vector<GrammarNodeId>{0, 1, 2, 3, 4, 5, 6});
  CHECK(equivalent_nodes(grammar, 0) == std::vector<GrammarNodeId>(7, 0));  // no tokens: nothing to tell
}

TEST_CASE("nodes of different rules merge when their callers see the same follow bytes") {
  // Two string rules (maxLength 40 and 60) as items of one array: far from their limits,
  // their counted positions behave alike, whatever rule they belong to.
  const Grammar grammar = json_schema_grammar(R"({"type": "array", "prefixItems": [
      {"type": "string", "maxLength": 40}, {"type": "string", "maxLength": 60}], "items": false})");
  const std::vector<GrammarNodeId> representative = equivalent_nodes(grammar, 3);
  std::vector<GrammarNodeId> classes = representative;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  CHECK(classes.size() * 10 < grammar.num_nodes());
}

TEST_CASE("a counted string: merged positions give exact masks up to the limit") {
  std::vector<std::string> vocab = {"<eos>", "\"",   "a",   "ab",     "abc",  "\xC3\xA9",
                                    "\xC3",  "\xA9", "\\n", "\\u00e", "\"\"", "a\""};
  const auto grammar =
      test::compile_for(json_schema_grammar(R"({"type": "string", "minLength": 4, "maxLength": 50})"), vocab);
  CHECK(grammar->masks().num_classified_nodes() < 120);  // of ~700 positions a matcher can stand on
  // Fill with one kind of token while it fits, then with "a" until only '"' fits.
  for (const TokenId filler : {2, 3, 4, 5, 8}) {
    CAPTURE(filler);
    GrammarMatcher m(grammar);
    REQUIRE(m.accept_token(1));
    for (const TokenId token : {filler, TokenId{2}}) {
      do {
        REQUIRE(test::allowed_ids(m) == test::brute_force_ids(m));
      } while (m.accept_token(token));
    }
    CHECK(test::allowed_ids(m) == std::vector<TokenId>{1});
  }
}

}  // namespace
}  // namespace pagedgen
