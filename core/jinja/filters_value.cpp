// Filters on single values: default, int, float, abs, round, tojson, attr.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <optional>

#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/json_output.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

Value default_filter(Interpreter&, const Value& input, CallArgs& args) {
  const bool boolean = truthy(argument_or(args, 1, "boolean", Value(false)));
  if (input.is_undefined() || (boolean && !truthy(input))) return argument_or(args, 0, "default_value", Value(""));
  return input;
}

// Python's int(text, base) over the whole (stripped) text, `_` allowed between digits.
std::optional<std::int64_t> parse_int(std::string_view text, int base) {
  text = strip(text, StripSide::kBoth);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  static constexpr std::string_view kPrefixes[] = {"", "", "0b", "", "", "", "", "",  "0o",
                                                   "", "", "",   "", "", "", "", "0x"};
  if (base < 17 && !kPrefixes[base].empty() && text.size() > 2 && lower(text.substr(0, 2)) == kPrefixes[base])
    text.remove_prefix(2);  // int('0x1f', 16) takes the prefix of its base
  std::string digits;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '_' && i > 0 && i + 1 < text.size() && text[i - 1] != '_') continue;
    digits += text[i];
  }
  if (digits.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) return std::nullopt;
  return negative ? -value : value;
}

std::optional<double> parse_float(std::string_view text) {
  const std::string trimmed(strip(text, StripSide::kBoth));
  if (trimmed.empty()) return std::nullopt;
  const std::string lowered = lower(trimmed);
  if (lowered == "nan" || lowered == "+nan" || lowered == "-nan") return std::nan("");
  if (lowered == "inf" || lowered == "+inf" || lowered == "infinity" || lowered == "+infinity") return HUGE_VAL;
  if (lowered == "-inf" || lowered == "-infinity") return -HUGE_VAL;
  double value = 0;
  const char* begin = trimmed.data() + (trimmed[0] == '+' ? 1 : 0);
  const auto result = std::from_chars(begin, trimmed.data() + trimmed.size(), value);
  if (result.ec != std::errc() || result.ptr != trimmed.data() + trimmed.size()) return std::nullopt;
  return value;
}

Value int_filter(Interpreter&, const Value& input, CallArgs& args) {
  const Value fallback = argument_or(args, 0, "default", Value(0));
  const std::int64_t base = int_argument(argument_or(args, 1, "base", Value(10)), "int's base");
  if (input.is_int() || input.is_bool()) return Value(integer_of(input));
  if (input.is_float()) {
    const double value = std::trunc(input.as_float());
    if (!(std::abs(value) < 9.2e18)) return fallback;
    return Value(static_cast<std::int64_t>(value));
  }
  if (!input.is_string()) return fallback;
  if (base >= 2 && base <= 36)
    if (auto value = parse_int(input.as_string(), static_cast<int>(base))) return Value(*value);
  if (auto value = parse_float(input.as_string()); value && std::abs(*value) < 9.2e18)
    return Value(static_cast<std::int64_t>(std::trunc(*value)));
  return fallback;
}

Value float_filter(Interpreter&, const Value& input, CallArgs& args) {
  const Value fallback = argument_or(args, 0, "default", Value(0.0));
  if (input.is_number()) return Value(number_as_double(input));
  if (input.is_string())
    if (auto value = parse_float(input.as_string())) return Value(*value);
  return fallback;
}

Value abs_filter(Interpreter&, const Value& input, CallArgs&) {
  if (input.is_float()) return Value(std::abs(input.as_float()));
  if (!input.is_number()) fail_render("bad operand type for abs(): '{}'", type_name(input));
  const std::int64_t value = integer_of(input);
  if (value == INT64_MIN) fail_render("integer overflow in abs");
  return Value(value < 0 ? -value : value);
}

// round(value, precision, method): 'common' is Python's round (halves to even), 'ceil' and
// 'floor' round up or down; ints stay ints under 'common'.
Value round_filter(Interpreter&, const Value& input, CallArgs& args) {
  const std::int64_t precision = int_argument(argument_or(args, 0, "precision", Value(0)), "round's precision");
  const std::string method = to_text(argument_or(args, 1, "method", Value("common")));
  if (method != "common" && method != "ceil" && method != "floor")
    fail_render("method must be 'common', 'ceil' or 'floor'");
  if (!input.is_number()) fail_render("round: a number is required, not '{}'", type_name(input));
  if (method == "common" && !input.is_float()) return Value(integer_of(input));
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double value = number_as_double(input) * scale;
  const double rounded = method == "ceil"    ? std::ceil(value)
                         : method == "floor" ? std::floor(value)
                                             : std::nearbyint(value);
  return Value(rounded / scale);
}

Value tojson_filter(Interpreter& interpreter, const Value& input, CallArgs& args) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonStyle style;
  const Value indent = argument_or(args, 1, "indent", Value(None{}));
  if (indent.is_string()) {
    style.indent = indent.as_string();
  } else if (!indent.is_none()) {
    const std::int64_t spaces = int_argument(indent, "tojson's indent");
    style.indent = interpreter.spaces(spaces);
  }
  style.indented = !indent.is_none();
  const Value separators = argument_or(args, 2, "separators", Value(None{}));
  if (!separators.is_none()) {
    const List parts = iterate(separators);
    if (parts.size() != 2) fail_render("tojson's separators must be a pair");
    style.item_separator = string_argument(parts[0], "tojson's item separator");
    style.key_separator = string_argument(parts[1], "tojson's key separator");
  } else if (style.indented) {
    style.item_separator.assign(1, ',');
  }
  style.sort_keys = truthy(argument_or(args, 3, "sort_keys", Value(false)));
  style.ensure_ascii = truthy(argument_or(args, 0, "ensure_ascii", Value(false)));
  std::string out = to_json(input, style, [&](std::size_t bytes) { interpreter.check_growing_size(bytes); });
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

Value attr_filter(Interpreter&, const Value& input, CallArgs& args) {
  return get_attribute(input, string_argument(argument_or(args, 0, "name", Value()), "attr's name"));
}

constexpr FilterEntry kValueFilters[] = {
    {"default", default_filter}, {"d", default_filter},   {"int", int_filter},       {"float", float_filter},
    {"abs", abs_filter},         {"round", round_filter}, {"tojson", tojson_filter}, {"attr", attr_filter},
};

}  // namespace

FilterFunction find_value_filter(std::string_view name) {
  for (const auto& [key, function] : kValueFilters)
    if (key == name) return function;
  return nullptr;
}

}  // namespace pagedgen::jinja
