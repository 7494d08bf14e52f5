// %-formatting and str.format over template values. Format specs ([fill][align][sign]
// [0][width][.precision][type]) go through fmt, whose spec language is Python's.
#include "jinja/python_format.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>

#include "jinja/arguments.h"
#include "jinja/interpreter.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

// The number spelled at the start of `text`, saturating (widths and precisions are bounded
// by the output budget before anything is formatted).
std::uint64_t leading_number(std::string_view text) {
  std::uint64_t number = 0;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    number = number > UINT64_MAX / 16 ? UINT64_MAX : number * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return number;
}

// Every width and precision of `spec` within the output budget.
void check_spec_numbers(Interpreter& interpreter, std::string_view spec) {
  for (std::size_t i = 0; i < spec.size(); ++i)
    if (spec[i] >= '0' && spec[i] <= '9' && (i == 0 || spec[i - 1] < '0' || spec[i - 1] > '9'))
      interpreter.check_string_size(leading_number(spec.substr(i)));
}

// `value` formatted with a Python format spec (after the ':').
std::string format_with_spec(Interpreter& interpreter, const Value& value, const std::string& spec) {
  if (spec.empty()) return to_text(value);
  check_spec_numbers(interpreter, spec);
  try {
    const std::string pattern = "{:" + spec + "}";
    if (value.is_int() || value.is_bool()) {
      if (std::strchr("eEfFgG%", spec.back()) != nullptr)
        return fmt::format(fmt::runtime(pattern), static_cast<double>(integer_of(value)));
      return fmt::format(fmt::runtime(pattern), integer_of(value));
    }
    if (value.is_float()) return fmt::format(fmt::runtime(pattern), value.as_float());
    return fmt::format(fmt::runtime(pattern), to_text(value));
  } catch (const fmt::format_error& error) {
    fail_render("invalid format spec '{}' for {}: {}", spec, type_name(value), error.what());
  }
}

// %s: at most `precision` code points, padded to `width` on the left (or right with '-').
std::string percent_string(Interpreter& interpreter, const Value& value, std::string_view flags, std::string_view width,
                           std::string_view precision) {
  std::string text = to_text(value);
  if (!precision.empty()) {
    const std::vector<std::size_t> offsets = code_point_offsets(text);
    const std::uint64_t keep = leading_number(precision.substr(1));
    if (keep + 1 < offsets.size()) text.resize(offsets[keep]);
  }
  const std::uint64_t pad_to = leading_number(width);
  interpreter.check_string_size(pad_to);
  const std::size_t length = code_point_count(text);
  if (pad_to <= length) return text;
  const std::string padding(static_cast<std::size_t>(pad_to) - length, ' ');
  return flags.find('-') != std::string_view::npos ? text + padding : padding + text;
}

// One %-conversion: flags, width, precision and type -> an fmt spec.
std::string percent_conversion(Interpreter& interpreter, const Value& value, std::string_view flags,
                               std::string_view width, std::string_view precision, char type) {
  if (type == 's') return percent_string(interpreter, value, flags, width, precision);
  if (type == 'r') return repr(value);
  if (!value.is_number()) fail_render("%{} format: a real number is required, not {}", type, type_name(value));
  std::string spec;
  if (flags.find('-') != flags.npos) spec += '<';
  if (flags.find('+') != flags.npos)
    spec += '+';
  else if (flags.find(' ') != flags.npos)
    spec += ' ';
  if (flags.find('0') != flags.npos && flags.find('-') == flags.npos) spec += '0';
  spec += width;
  if (type == 'd' || type == 'i' || type == 'x' || type == 'X' || type == 'o') {
    const double number = number_as_double(value);
    if (value.is_float() && !(std::abs(number) < 9.2e18)) fail_render("%{} format: {} is out of range", type, number);
    const std::int64_t integer = value.is_float() ? static_cast<std::int64_t>(number) : integer_of(value);
    return format_with_spec(interpreter, Value(integer), spec + (type == 'i' ? 'd' : type));
  }
  spec += precision.empty() ? ".6" : std::string(precision);
  return format_with_spec(interpreter, Value(number_as_double(value)), spec + type);
}

}  // namespace

std::string python_percent_format(Interpreter& interpreter, std::string_view text, const Value& values) {
  const bool several = values.is_list() && values.tuple;  // only a tuple spreads over the conversions
  const List items = several ? values.as_list() : List{values};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    std::size_t at = i + 1;
    const Value* named = nullptr;
    if (at < text.size() && text[at] == '(') {
      const std::size_t close = text.find(')', at);
      if (close == std::string_view::npos || !values.is_dict()) fail_render("format requires a mapping");
      named = values.as_dict().find(text.substr(at + 1, close - at - 1));
      if (named == nullptr) fail_render("format key '{}' not found", text.substr(at + 1, close - at - 1));
      at = close + 1;
    }
    const std::size_t flags_start = at;
    while (at < text.size() && std::strchr("-+ #0", text[at]) != nullptr) ++at;
    const std::size_t width_start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    const std::size_t precision_start = at;
    if (at < text.size() && text[at] == '.')
      for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]));) ++at;
    if (at >= text.size()) fail_render("incomplete format");
    const char type = text[at];
    i = at;
    if (type == '%') {
      out += '%';
      continue;
    }
    if (std::strchr("srdixXofFeEgG", type) == nullptr) fail_render("unsupported format character '{}'", type);
    if (named == nullptr && next >= items.size()) fail_render("not enough arguments for format string");
    const Value& value = named != nullptr ? *named : items[next++];
    out += percent_conversion(interpreter, value, text.substr(flags_start, width_start - flags_start),
                              text.substr(width_start, precision_start - width_start),
                              text.substr(precision_start, at - precision_start), type);
    interpreter.check_growing_size(out.size());
  }
  interpreter.check_string_size(out.size());
  // A tuple's values must all be used, and so must one value unless Python takes it for a
  // mapping (a dict or a list, which %(name)s may leave unused).
  const bool mapping = values.is_dict() || (values.is_list() && !values.tuple);
  if (next < items.size() && (several || !mapping)) fail_render("not all arguments converted during string formatting");
  return out;
}

std::string python_str_format(Interpreter& interpreter, std::string_view text, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') fail_render("single '}}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string_view::npos) fail_render("single '{{' encountered in format string");
    std::string field(text.substr(i + 1, close - i - 1));
    i = close;
    std::string spec;
    if (const std::size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    bool use_repr = false;
    if (field.ends_with("!r") || field.ends_with("!s")) {
      use_repr = field.back() == 'r';
      field.resize(field.size() - 2);
    }
    const Value* value = nullptr;
    if (field.empty())
      value = argument(args, auto_index++, "");
    else if (std::isdigit(static_cast<unsigned char>(field[0])))
      value = argument(args, std::stoul(field), "");
    else
      value = argument(args, args.positional.size(), field);
    if (value == nullptr) fail_render("format: no argument for field '{}'", field);
    out += use_repr ? repr(*value) : format_with_spec(interpreter, *value, spec);
    interpreter.check_growing_size(out.size());
  }
  interpreter.check_string_size(out.size());
  return out;
}

std::string python_replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                           std::int64_t count) {
  std::string out;
  std::int64_t done = 0;
  if (old_text.empty()) {  // Python inserts `new` before every code point and at the end
    std::size_t pos = 0;
    for (; pos <= text.size() && (count < 0 || done < count); ++done) {
      out += new_text;
      if (pos == text.size()) {
        ++pos;
        break;
      }
      const std::size_t length = decode_at(text, pos).length;
      out += text.substr(pos, length);
      pos += length;
    }
    if (pos < text.size()) out += text.substr(pos);
    return out;
  }
  std::size_t pos = 0;
  for (std::size_t at; (count < 0 || done < count) && (at = text.find(old_text, pos)) != std::string_view::npos;
       ++done) {
    out += text.substr(pos, at - pos);
    out += new_text;
    pos = at + old_text.size();
  }
  out += text.substr(pos);
  return out;
}

}  // namespace pagedgen::jinja
