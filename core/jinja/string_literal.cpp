// String and number literals: Python's unicode-escape rules for strings, Python's integer
// and float spellings for numbers.
#include "jinja/string_literal.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

#include "jinja/unicode_text.h"

namespace pagedgen::jinja {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// \xhh, \uhhhh, \Uhhhhhhhh: `digits` hex digits at text[pos]; false when they are not there.
bool read_hex_escape(std::string_view text, std::size_t pos, std::size_t digits, std::string& out) {
  if (pos + digits > text.size()) return false;
  char32_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const int v = hex_value(text[pos + i]);
    if (v < 0) return false;
    value = value * 16 + static_cast<char32_t>(v);
  }
  if (value > 0x10FFFF) return false;
  append_utf8(out, value);
  return true;
}

// One escape after a backslash at body[pos]; returns the position after it.
std::size_t unescape_one(std::string_view body, std::size_t pos, std::string& out) {
  const char c = body[pos];
  static constexpr std::string_view kSimple = "\\'\"abfnrtv";
  static constexpr std::string_view kMeaning = "\\'\"\a\b\f\n\r\t\v";
  if (const std::size_t i = kSimple.find(c); i != std::string_view::npos) {
    out += kMeaning[i];
    return pos + 1;
  }
  if (c == '\n') return pos + 1;
  if (c >= '0' && c <= '7') {
    char32_t value = 0;
    std::size_t end = pos;
    while (end < body.size() && end < pos + 3 && body[end] >= '0' && body[end] <= '7')
      value = value * 8 + (body[end++] - '0');
    append_utf8(out, value);
    return end;
  }
  const std::size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits > 0 && read_hex_escape(body, pos + 1, digits, out)) return pos + 1 + digits;
  out += '\\';  // an escape Python does not know stays as written
  return pos;
}

std::string digits_without_underscores(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += c;
  return out;
}

// Digits (and single underscores between them) of `base` from pos.
std::size_t scan_digits(std::string_view source, std::size_t pos, int base) {
  const auto is_digit = [&](char c) {
    return hex_value(c) >= 0 && hex_value(c) < base && !(base == 10 && !std::isdigit(static_cast<unsigned char>(c)));
  };
  std::size_t end = pos;
  while (end < source.size()) {
    if (is_digit(source[end])) {
      ++end;
    } else if (source[end] == '_' && end > pos && end + 1 < source.size() && is_digit(source[end + 1])) {
      ++end;
    } else {
      break;
    }
  }
  return end;
}

// The float spelled from pos, or 0 when none: digits then `.digits`, `e[+-]digits` or both.
std::size_t scan_float(std::string_view source, std::size_t pos) {
  std::size_t end = scan_digits(source, pos, 10);
  bool fraction = false;
  if (end + 1 < source.size() && source[end] == '.' && std::isdigit(static_cast<unsigned char>(source[end + 1]))) {
    end = scan_digits(source, end + 1, 10);
    fraction = true;
  }
  if (end < source.size() && (source[end] == 'e' || source[end] == 'E')) {
    std::size_t at = end + 1;
    if (at < source.size() && (source[at] == '+' || source[at] == '-')) ++at;
    if (at < source.size() && std::isdigit(static_cast<unsigned char>(source[at]))) return scan_digits(source, at, 10);
  }
  return fraction ? end : 0;
}

}  // namespace

StringLiteral read_string_literal(std::string_view source, std::size_t pos) {
  const char quote = source[pos];
  StringLiteral literal{"", pos + 1, false};
  std::size_t i = pos + 1;
  while (i < source.size() && source[i] != quote) {
    if (source[i] == '\\' && i + 1 < source.size()) {
      i = unescape_one(source, i + 1, literal.value);
      continue;
    }
    literal.value += source[i++];
  }
  if (i >= source.size()) return literal;
  literal.end = i + 1;
  literal.closed = true;
  return literal;
}

NumberLiteral read_number_literal(std::string_view source, std::size_t pos, bool allow_float) {
  NumberLiteral number;
  if (allow_float) {
    if (const std::size_t end = scan_float(source, pos); end > 0) {
      number.is_float = true;
      number.number = std::strtod(digits_without_underscores(source.substr(pos, end - pos)).c_str(), nullptr);
      number.end = end;
      return number;
    }
  }
  int base = 10;
  std::size_t start = pos;
  if (source[pos] == '0' && pos + 2 < source.size()) {
    const char prefix = static_cast<char>(std::tolower(static_cast<unsigned char>(source[pos + 1])));
    base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 10;
    if (base != 10 && scan_digits(source, pos + 2, base) > pos + 2)
      start = pos + 2;
    else
      base = 10;
  }
  // Decimal: jinja2 reads "0" alone, or a number without a leading zero.
  number.end = base == 10 && source[pos] == '0' ? pos + 1 : scan_digits(source, start, base);
  const std::string digits = digits_without_underscores(source.substr(start, number.end - start));
  const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), number.integer, base);
  number.out_of_range = result.ec == std::errc::result_out_of_range;
  return number;
}

}  // namespace pagedgen::jinja
