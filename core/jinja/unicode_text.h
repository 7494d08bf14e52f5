// Python's view of a str over UTF-8 bytes: code points (what len, indexing and slicing
// count), str.isspace (what strip and split remove) and case mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagedgen::jinja {

// The code point at `pos` and its length in bytes (invalid bytes: U+FFFD, length 1).
struct CodePoint {
  char32_t value;
  std::size_t length;
};
CodePoint decode_at(std::string_view text, std::size_t pos);
void append_utf8(std::string& out, char32_t code_point);

// Byte offsets of each code point's start, plus text.size() at the end.
std::vector<std::size_t> code_point_offsets(std::string_view text);
std::size_t code_point_count(std::string_view text);

// Python's str.isspace for one code point.
bool is_python_space(char32_t c);

enum class StripSide { kLeft, kRight, kBoth };
// str.strip() (whitespace) or str.strip(chars) when `chars` is given.
std::string_view strip(std::string_view text, StripSide side, const std::string_view* chars = nullptr);
// str.split() without a separator: runs of whitespace, none empty; at most `max_splits`
// splits when it is not negative (the rest kept, left-stripped).
std::vector<std::string> split_whitespace(std::string_view text, std::int64_t max_splits);

char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_cased_letter(char32_t c);
std::string upper(std::string_view text);
std::string lower(std::string_view text);
// str.capitalize(): the first code point upper-cased, the rest lower-cased.
std::string capitalize(std::string_view text);
// str.title(): each run of letters starts upper-case, the rest lower-case.
std::string python_title(std::string_view text);

}  // namespace pagedgen::jinja
