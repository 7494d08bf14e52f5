// The rule for one kind of JSON string, quotes included: well-formed UTF-8 only (no
// overlong forms, surrogates or bytes past U+10FFFF), no raw control characters, the
// escapes JSON defines (\uXXXX never a lone surrogate half, so a character is always one
// escape), optionally a length range in code points and a set of excluded texts (the keys
// an object already lists).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar_builder.h"

namespace pagedgen {

struct JsonStringSpec {
  uint64_t min_length = 0;  // code points; an escape counts as the one it stands for
  std::optional<uint64_t> max_length;
  bool allow_escapes = true;
  // Contents (raw UTF-8 between the quotes) the string may not have. Only meaningful
  // without escapes, where each text has exactly one spelling.
  std::vector<std::string> excluded;
};

RuleId add_json_string_rule(GrammarBuilder& builder, const JsonStringSpec& spec, std::string name);

}  // namespace pagedgen
