// The pattern parsed in search mode and lowered in JSON string spelling, quoted, with the
// length range counted over its characters.
#include "grammar/json_pattern_rule.h"

#include "grammar/char_nfa.h"
#include "grammar/grammar_error.h"
#include "grammar/nfa_lowering.h"
#include "grammar/regex_parser.h"
#include "util/error.h"

namespace pagedgen {

RuleId add_json_pattern_rule(GrammarBuilder& builder, std::string_view pattern, uint64_t min_length,
                             std::optional<uint64_t> max_length, const std::string& location) {
  NfaLowering lowering;
  lowering.what = "the regex";
  lowering.spelling = CharSpelling::kJsonString;
  lowering.min_chars = min_length;
  lowering.max_chars = max_length;
  lowering.quoted = true;
  try {
    CharNfa nfa(lowering.what);
    const NfaRule rule{location + " (pattern)", parse_regex(nfa, pattern, RegexMatch::kSearch)};
    return lower_nfa_rules(builder, nfa, {&rule, 1}, 0, lowering);
  } catch (const UnsupportedSchemaError& e) {
    refuse_schema("{}: 'pattern' is not supported here: {}", location, e.what());
  } catch (const Error& e) {
    fail("{}: 'pattern' is malformed: {}", location, e.what());
  }
}

}  // namespace pagedgen
