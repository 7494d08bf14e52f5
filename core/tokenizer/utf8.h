// UTF-8 helpers for tokenizers: step through code points, find where the last complete
// character ends (so streamed text never splits one), and replace invalid sequences with
// U+FFFD (one per maximal ill-formed subpart, as Unicode recommends). Never throws.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pagedgen {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

enum class Utf8Status {
  Valid,      // a well-formed character of `length` bytes
  Invalid,    // `length` bytes (at least 1) that can never start a well-formed character
  Truncated,  // `length` bytes that begin a well-formed character, cut off by the end
};

struct Utf8Step {
  Utf8Status status;
  size_t length;        // bytes consumed, >= 1 when the input is not empty at `pos`
  char32_t code_point;  // valid only when status == Valid
};

// Reads one character at `pos` (pos < text.size()).
Utf8Step utf8_next(std::string_view text, size_t pos);

// Length of the longest prefix of `bytes` that does not end inside an unfinished (but so
// far well-formed) character. Invalid bytes count as finished: they become U+FFFD.
size_t utf8_complete_prefix(std::string_view bytes);

bool utf8_is_valid(std::string_view text);

// Characters of valid UTF-8 text (decoded text is): the bytes that start one.
inline std::ptrdiff_t utf8_num_code_points(std::string_view text) {
  std::ptrdiff_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return count;
}

// `text` with every invalid or truncated sequence replaced by U+FFFD.
std::string utf8_sanitize(std::string_view text);

// Appends the UTF-8 encoding of `code_point` (U+FFFD for surrogates or > U+10FFFF).
void utf8_append(std::string& out, char32_t code_point);

}  // namespace pagedgen
