// ECMA-262's WhiteSpace and LineTerminator code points, its word and digit characters.
#include "grammar/regex_char_sets.h"

namespace pagedgen {
namespace {

const std::vector<CodePointRange> kDigits = {{'0', '9'}};
const std::vector<CodePointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodePointRange> kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                                            {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                            {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CodePointRange> kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

}  // namespace

std::vector<CodePointRange> class_escape_ranges(char letter) {
  switch (letter) {
    case 'd':
      return kDigits;
    case 'D':
      return complement_ranges(kDigits);
    case 'w':
      return kWord;
    case 'W':
      return complement_ranges(kWord);
    case 's':
      return kSpace;
    case 'S':
      return complement_ranges(kSpace);
    default:
      return {};
  }
}

std::vector<CodePointRange> dot_ranges() { return complement_ranges(kLineTerminators); }

std::vector<CodePointRange> any_char_ranges() { return complement_ranges({}); }

}  // namespace pagedgen
