// The character sets of ECMA-262 regexes: the class escapes \d \w \s and their negations,
// and `.`, as code point ranges.
#pragma once

#include <vector>

#include "grammar/char_nfa.h"

namespace pagedgen {

// The set of a class escape letter (d D w W s S); empty for any other letter.
std::vector<CodePointRange> class_escape_ranges(char letter);

// `.`: every character but the line terminators \n \r U+2028 U+2029.
std::vector<CodePointRange> dot_ranges();

// Every character (JSON Schema's implicit `.*` around an unanchored pattern).
std::vector<CodePointRange> any_char_ranges();

}  // namespace pagedgen
