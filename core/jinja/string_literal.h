// Literals inside tags, read as jinja2's lexer reads them: strings with Python's escapes,
// integers (with _ and 0b/0o/0x) and floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagedgen::jinja {

struct StringLiteral {
  std::string value;  // unescaped
  std::size_t end;    // just past the closing quote
  bool closed;
};
// The quoted string starting at source[pos] (a ' or ").
StringLiteral read_string_literal(std::string_view source, std::size_t pos);

struct NumberLiteral {
  bool is_float = false;
  bool out_of_range = false;
  std::int64_t integer = 0;
  double number = 0;
  std::size_t end = 0;
};
// The number starting at source[pos] (a digit); a float only when `allow_float`.
NumberLiteral read_number_literal(std::string_view source, std::size_t pos, bool allow_float);

}  // namespace pagedgen::jinja
