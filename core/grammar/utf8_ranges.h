// A range of code points as the UTF-8 byte patterns that spell exactly its characters:
// [U+0000, U+FFFF] is [00-7F] | [C2-DF][80-BF] | [E0][A0-BF][80-BF] | [E1-EC][80-BF][80-BF] |
// ... (surrogates left out). The automata of regexes and grammars are built over bytes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "grammar/char_nfa.h"

namespace pagedgen {

struct ByteRange {
  uint8_t first;  // inclusive
  uint8_t last;
};

struct Utf8Pattern {
  std::array<ByteRange, 4> bytes;
  uint8_t length;  // 1 to 4
};

// The patterns of `range`'s characters (surrogates in it are skipped), in code point order.
std::vector<Utf8Pattern> utf8_patterns(CodePointRange range);

}  // namespace pagedgen
