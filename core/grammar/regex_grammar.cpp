// A regex is one rule: its automaton made deterministic over UTF-8 bytes. The choices are
// one rule too: their byte trie, so shared prefixes are one path.
#include "grammar/regex_grammar.h"

#include <simdjson.h>

#include <map>
#include <utility>
#include <vector>

#include "grammar/grammar_builder.h"
#include "grammar/nfa_lowering.h"
#include "grammar/regex_parser.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {

Grammar regex_grammar(std::string_view pattern, const StopToken& stop) {
  CharNfa nfa("the regex");
  const NfaRule rule{"(regex)", parse_regex(nfa, pattern, RegexMatch::kWhole)};
  GrammarBuilder builder(GrammarSource::kRegex);
  NfaLowering lowering;
  lowering.what = "the regex";
  const RuleId root = lower_nfa_rules(builder, nfa, {&rule, 1}, 0, lowering, stop);
  return builder.finish(root, stop);
}

Grammar choice_grammar(std::span<const std::string> choices, const StopToken& stop) {
  if (choices.empty()) fail("the list of choices is empty; give at least one");
  GrammarBuilder builder(GrammarSource::kChoices);
  const RuleId root = builder.add_rule("(choices)");
  std::map<std::pair<GrammarNodeId, uint8_t>, GrammarNodeId> child;  // the trie's edges
  for (size_t i = 0; i < choices.size(); ++i) {
    if ((i & 1023) == 0) stop.throw_if_stopped();
    if (!utf8_is_valid(choices[i])) fail("choice {} is not valid UTF-8", i);
    GrammarNodeId at = builder.rule_start(root);
    for (const char c : choices[i]) {
      const auto byte = static_cast<uint8_t>(c);
      const auto [it, added] = child.emplace(std::pair{at, byte}, 0);
      if (added) {
        it->second = builder.add_node(root);
        builder.add_byte(at, byte, it->second);
      }
      at = it->second;
    }
    builder.set_final(at);
  }
  return builder.finish(root, stop);
}

Grammar choice_grammar(std::string_view choices_json, const StopToken& stop) {
  simdjson::dom::parser parser;
  simdjson::dom::array array;
  if (parser.parse(choices_json.data(), choices_json.size()).get_array().get(array) != simdjson::SUCCESS)
    fail("the choices must be a JSON array of strings");
  std::vector<std::string> choices;
  for (const simdjson::dom::element item : array) {
    std::string_view text;
    if (item.get_string().get(text) != simdjson::SUCCESS) fail("the choices must be a JSON array of strings");
    choices.emplace_back(text);
  }
  return choice_grammar(choices, stop);
}

}  // namespace pagedgen
