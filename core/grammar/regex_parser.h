// Regular expressions as structured outputs read them: a subset of ECMA-262 (JavaScript's,
// as JSON Schema's `pattern` and vLLM's guided_regex use), parsed into a CharNfa fragment
// without recursion (groups on an explicit stack).
//   - literals; escapes \d \D \w \W \s \S \n \r \t \f \v \0 \cX \xHH \uHHHH (a surrogate
//     pair as one character) and escaped syntax characters;
//   - classes [a-z_], negated [^"\n], with the escapes above inside; `.` (any character
//     but \n \r U+2028 U+2029);
//   - quantifiers * + ? {n} {n,} {n,m}, each also lazy (`*?`: the same set of texts);
//   - alternation |, groups ( ) (?: ) (?<name> );
//   - anchors ^ and $ only at the start and end of the pattern or of a top-level
//     alternative.
// Backreferences, lookaround, \b \B, Unicode properties and flags are refused
// (UnsupportedSchemaError, naming the feature and its offset); a malformed pattern is an
// Error. Matching is case-sensitive, as without the `i` flag.
#pragma once

#include <string_view>

#include "grammar/char_nfa.h"

namespace pagedgen {

enum class RegexMatch : uint8_t {
  kWhole,   // the whole text matches (guided_regex); ^ and $ change nothing
  kSearch,  // somewhere in the text (JSON Schema `pattern`): any text before an alternative
            // without ^, and after one without $
};

NfaFragment parse_regex(CharNfa& nfa, std::string_view pattern, RegexMatch match);

}  // namespace pagedgen
