// str() and repr() of template values, byte for byte as CPython 3 prints them.
#include "jinja/value_text.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "jinja/unicode_text.h"

namespace pagedgen::jinja {

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // The shortest digits that round-trip, laid out by Python's rule: positional for
  // exponents -4..15, scientific otherwise.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string_view text(buffer, result.ptr - buffer);
  const std::size_t e = text.find('e');
  int exponent = 0;
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(), exponent);
  const bool negative = text[0] == '-';
  std::string digits;
  for (char c : text.substr(0, e))
    if (c >= '0' && c <= '9') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else {
      const std::size_t integer_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() < integer_digits) digits.append(integer_digits - digits.size(), '0');
      out += digits.substr(0, integer_digits) + ".";
      out += digits.size() > integer_digits ? digits.substr(integer_digits) : "0";
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  return out + fmt::format("e{}{:02}", exponent < 0 ? '-' : '+', std::abs(exponent));
}

namespace {

// str.isprintable's complement for the code points that show up in text: controls,
// separators other than ' ', and format characters.
bool is_unprintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return true;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return true;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return true;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) return true;
  return (c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000 || c == 0xFFFE || c == 0xFFFF;
}

void append_escaped(std::string& out, char32_t c) {
  switch (c) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  if (c <= 0xFF)
    out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
  else if (c <= 0xFFFF)
    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
  else
    out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
}

void append_repr(std::string& out, const Value& value, int depth);

void append_list_repr(std::string& out, const List& list, bool tuple, int depth) {
  out += tuple ? '(' : '[';
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    append_repr(out, list[i], depth + 1);
  }
  if (tuple && list.size() == 1) out += ',';
  out += tuple ? ')' : ']';
}

void append_dict_repr(std::string& out, const Dict& dict, int depth) {
  out += '{';
  bool first = true;
  for (const auto& [key, value] : dict.entries) {
    if (!first) out += ", ";
    first = false;
    append_repr(out, key, depth + 1);
    out += ": ";
    append_repr(out, value, depth + 1);
  }
  out += '}';
}

void append_repr(std::string& out, const Value& value, int depth) {
  check_value_depth(depth);
  if (value.is_string()) {
    append_string_repr(out, value.as_string());
  } else if (value.is_list()) {
    append_list_repr(out, value.as_list(), value.tuple, depth);
  } else if (value.is_dict()) {
    append_dict_repr(out, value.as_dict(), depth);
  } else if (value.is_namespace()) {
    out += "<Namespace ";
    append_dict_repr(out, value.as_namespace().attributes, depth);
    out += '>';
  } else if (value.is_undefined()) {
    out += "Undefined";
  } else {
    out += to_text(value);
  }
}

}  // namespace

void append_string_repr(std::string& out, const std::string& text) {
  const bool has_single = text.find('\'') != std::string::npos;
  const char quote = has_single && text.find('"') == std::string::npos ? '"' : '\'';
  out += quote;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    if (cp.value == static_cast<char32_t>(quote) || cp.value == '\\') {
      out += '\\';
      out += static_cast<char>(cp.value);
    } else if (is_unprintable(cp.value)) {
      append_escaped(out, cp.value);
    } else {
      out.append(text, pos, cp.length);
    }
    pos += cp.length;
  }
  out += quote;
}

std::string markup_escape(std::string_view text) {
  static constexpr std::string_view kSpecial = "&<>\"'";
  static constexpr std::string_view kEntities[] = {"&amp;", "&lt;", "&gt;", "&#34;", "&#39;"};
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const std::size_t special = kSpecial.find(c);
    if (special == std::string_view::npos)
      out += c;
    else
      out += kEntities[special];
  }
  return out;
}

std::string repr(const Value& value) {
  std::string out;
  append_repr(out, value, 0);
  return out;
}

namespace {

struct TextVisitor {
  const Value& value;
  std::string operator()(const Undefined&) const { return ""; }
  std::string operator()(const None&) const { return "None"; }
  std::string operator()(bool b) const { return b ? "True" : "False"; }
  std::string operator()(std::int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const { return float_repr(d); }
  std::string operator()(const std::string& s) const { return s; }
  std::string operator()(const std::shared_ptr<const Callable>& c) const { return "<function " + c->name + ">"; }
  std::string operator()(const std::shared_ptr<const LoopState>& l) const {
    return fmt::format("<LoopContext {}/{}>", l->index0 + 1, l->length);
  }
  std::string operator()(const auto&) const { return repr(value); }
};

}  // namespace

std::string to_text(const Value& value) { return std::visit(TextVisitor{value}, value.data); }

}  // namespace pagedgen::jinja
