// Filters on text: trim, upper, lower, capitalize, title, replace, indent, string, safe,
// escape, format, wordcount, center.
#include <fmt/format.h>

#include <algorithm>

#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/python_format.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

Value trim(Interpreter&, const Value& input, CallArgs& args) {
  const std::string text = to_text(input);
  const Value chars = argument_or(args, 0, "chars", Value(None{}));
  if (chars.is_none()) return Value(strip(text, StripSide::kBoth));
  const std::string set_text = string_argument(chars, "trim's chars");
  const std::string_view set = set_text;
  return Value(strip(text, StripSide::kBoth, &set));
}

Value upper_filter(Interpreter&, const Value& input, CallArgs&) { return Value(upper(to_text(input))); }
Value lower_filter(Interpreter&, const Value& input, CallArgs&) { return Value(lower(to_text(input))); }
Value capitalize_filter(Interpreter&, const Value& input, CallArgs&) { return Value(capitalize(to_text(input))); }
Value string_filter(Interpreter&, const Value& input, CallArgs&) { return Value(to_text(input)); }

// markupsafe's Markup: a str that escapes what + adds to it.
Value safe_filter(Interpreter&, const Value& input, CallArgs&) {
  Value text(to_text(input));
  text.markup = true;
  return text;
}

// jinja2's title: each word (after '-', whitespace or an opening bracket) capitalized.
Value title_filter(Interpreter&, const Value& input, CallArgs&) {
  const std::string text = to_text(input);
  std::string out;
  bool word_start = true;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    const bool separator = is_python_space(cp.value) || cp.value == '-' || cp.value == '(' || cp.value == '{' ||
                           cp.value == '[' || cp.value == '<';
    append_utf8(out, separator ? cp.value : word_start ? to_upper(cp.value) : to_lower(cp.value));
    word_start = separator;
    pos += cp.length;
  }
  return Value(std::move(out));
}

Value replace_filter(Interpreter& interpreter, const Value& input, CallArgs& args) {
  const std::string text = to_text(input);
  const std::string old_text = to_text(argument_or(args, 0, "old", Value()));
  const std::string new_text = to_text(argument_or(args, 1, "new", Value()));
  const Value count = argument_or(args, 2, "count", Value(None{}));
  std::string out = python_replace(text, old_text, new_text, count.is_none() ? -1 : int_argument(count, "count"));
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

// Python's str.splitlines().
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    const char32_t c = cp.value;
    const bool breaks = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                        c == 0x2028 || c == 0x2029;
    if (!breaks) {
      pos += cp.length;
      continue;
    }
    lines.push_back(text.substr(start, pos - start));
    pos += cp.length + (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n' ? 1 : 0);
    start = pos;
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

// jinja2 3.1's indent: lines after the first indented, blank ones only with blank=true.
Value indent_filter(Interpreter& interpreter, const Value& input, CallArgs& args) {
  if (input.is_undefined()) throw Failure(input.undefined_hint());
  if (!input.is_string()) fail_render("indent: can only indent a str, not '{}'", type_name(input));
  const Value width = argument_or(args, 0, "width", Value(4));
  const bool first = truthy(argument_or(args, 1, "first", Value(false)));
  const bool blank = truthy(argument_or(args, 2, "blank", Value(false)));
  std::string indentation;
  if (width.is_string()) {
    indentation = width.as_string();
  } else {
    const std::int64_t spaces = int_argument(width, "indent's width");
    indentation = interpreter.spaces(spaces);
  }
  const std::string text = to_text(input) + "\n";
  const std::vector<std::string_view> lines = split_lines(text);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (i > 0 && (blank || !lines[i].empty())) out += indentation;
    out += lines[i];
    interpreter.check_growing_size(out.size());
  }
  if (first) out = indentation + out;
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

Value escape_filter(Interpreter&, const Value& input, CallArgs&) {
  if (input.markup) return input;
  Value text(markup_escape(to_text(input)));
  text.markup = true;
  return text;
}

Value format_filter(Interpreter& interpreter, const Value& input, CallArgs& args) {
  if (!args.keywords.empty()) {
    Dict named;
    for (const auto& [key, value] : args.keywords) named.set(Value(key), value);
    return Value(python_percent_format(interpreter, to_text(input), Value(std::move(named))));
  }
  return Value(python_percent_format(interpreter, to_text(input), Value::make_tuple(List(args.positional))));
}

Value wordcount_filter(Interpreter&, const Value& input, CallArgs&) {
  const std::string text = to_text(input);
  std::int64_t words = 0;
  bool in_word = false;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    const char32_t c = cp.value;
    const bool word_char = (c < 0x80 && (std::isalnum(static_cast<int>(c)) || c == '_')) ||
                           (c >= 0x80 && !is_python_space(c) && is_cased_letter(c));
    if (word_char && !in_word) ++words;
    in_word = word_char;
    pos += cp.length;
  }
  return Value(words);
}

constexpr FilterEntry kTextFilters[] = {
    {"trim", trim},
    {"upper", upper_filter},
    {"lower", lower_filter},
    {"capitalize", capitalize_filter},
    {"title", title_filter},
    {"replace", replace_filter},
    {"indent", indent_filter},
    {"string", string_filter},
    {"safe", safe_filter},
    {"escape", escape_filter},
    {"e", escape_filter},
    {"format", format_filter},
    {"wordcount", wordcount_filter},
};

}  // namespace

FilterFunction find_text_filter(std::string_view name) {
  for (const auto& [key, function] : kTextFilters)
    if (key == name) return function;
  return nullptr;
}

}  // namespace pagedgen::jinja
