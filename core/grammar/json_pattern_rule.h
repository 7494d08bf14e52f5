// The rule of a JSON string whose value must match a JSON Schema `pattern`: the ECMA-262
// regex (regex_parser.h) unanchored, as JSON Schema reads it (a match anywhere in the value
// unless ^ or $ pin it), over the decoded characters, while the text is the value's JSON
// spelling: '"', '\' and control characters escaped (\n, \u001f), every other character
// raw UTF-8 (one spelling per value, a subset of the JSON that decodes to it). minLength and
// maxLength count the same characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar_builder.h"

namespace pagedgen {

// Throws Error for a malformed pattern, UnsupportedSchemaError for a refused feature or a
// pattern past the automaton's caps; messages start with `location` and name 'pattern'.
RuleId add_json_pattern_rule(GrammarBuilder& builder, std::string_view pattern, uint64_t min_length,
                             std::optional<uint64_t> max_length, const std::string& location);

}  // namespace pagedgen
