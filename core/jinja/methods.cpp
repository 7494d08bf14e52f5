// The Python methods templates call on values: str's (strip, split, startswith, replace,
// format, ...) and dict's (items, keys, values, get). Methods that would change a list or
// dict are refused, as transformers' immutable sandbox refuses them.
#include <fmt/format.h>

#include <algorithm>

#include "jinja/arguments.h"
#include "jinja/interpreter.h"
#include "jinja/python_format.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

using Method = Value (*)(Interpreter&, const Value& self, CallArgs& args);

Value strip_method(const Value& self, const CallArgs& args, StripSide side) {
  const Value chars = argument_or(args, 0, "chars", Value(None{}));
  if (chars.is_none()) return Value(strip(self.as_string(), side));
  const std::string set_text = string_argument(chars, "strip's chars");
  const std::string_view set = set_text;
  return Value(strip(self.as_string(), side, &set));
}

Value split_method(Interpreter& interpreter, const Value& self, CallArgs& args) {
  const Value separator = argument_or(args, 0, "sep", Value(None{}));
  const std::int64_t max_splits = int_argument(argument_or(args, 1, "maxsplit", Value(-1)), "maxsplit");
  List parts;
  if (separator.is_none()) {
    for (std::string& part : split_whitespace(self.as_string(), max_splits)) parts.emplace_back(std::move(part));
    return Value(std::move(parts));
  }
  const std::string& sep = string_argument(separator, "split's separator");
  if (sep.empty()) fail_render("empty separator");
  std::string_view text = self.as_string();
  for (std::size_t at; (at = text.find(sep)) != std::string_view::npos &&
                       (max_splits < 0 || static_cast<std::int64_t>(parts.size()) < max_splits);) {
    interpreter.count_steps();
    parts.emplace_back(text.substr(0, at));
    text.remove_prefix(at + sep.size());
  }
  parts.emplace_back(text);
  return Value(std::move(parts));
}

// startswith / endswith: a str or a tuple of them.
bool affix_matches(const Value& self, const Value& affix, bool at_start) {
  if (affix.is_list()) {
    const List& options = affix.as_list();
    return std::any_of(options.begin(), options.end(),
                       [&](const Value& o) { return affix_matches(self, o, at_start); });
  }
  const std::string& text = string_argument(affix, at_start ? "startswith's prefix" : "endswith's suffix");
  return at_start ? self.as_string().starts_with(text) : self.as_string().ends_with(text);
}

Value replace_method(Interpreter& interpreter, const Value& self, CallArgs& args) {
  const std::string& old_text = string_argument(argument_or(args, 0, "old", Value()), "replace's old");
  const std::string& new_text = string_argument(argument_or(args, 1, "new", Value()), "replace's new");
  const std::int64_t count = int_argument(argument_or(args, 2, "count", Value(-1)), "replace's count");
  std::string out = python_replace(self.as_string(), old_text, new_text, count);
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

Value join_method(Interpreter& interpreter, const Value& self, CallArgs& args) {
  std::string out;
  bool first = true;
  for (const Value& item : iterate(argument_or(args, 0, "iterable", Value(List{})))) {
    if (!item.is_string()) fail_render("sequence item: expected str instance, {} found", type_name(item));
    if (!first) out += self.as_string();
    first = false;
    out += item.as_string();
    interpreter.check_growing_size(out.size());
  }
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

Value find_method_value(const Value& self, CallArgs& args, bool from_right) {
  const std::string& needle = string_argument(argument_or(args, 0, "sub", Value()), "find's substring");
  const std::string& text = self.as_string();
  const std::size_t at = from_right ? text.rfind(needle) : text.find(needle);
  if (at == std::string::npos) return Value(-1);
  return Value(static_cast<std::int64_t>(code_point_count(std::string_view(text).substr(0, at))));
}

Value count_method(const Value& self, CallArgs& args) {
  const std::string& needle = string_argument(argument_or(args, 0, "sub", Value()), "count's substring");
  const std::string& text = self.as_string();
  if (needle.empty()) return Value(static_cast<std::int64_t>(code_point_count(text) + 1));
  std::int64_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return Value(count);
}

template <bool (*Predicate)(char32_t)>
Value all_code_points(const Value& self) {
  const std::string& text = self.as_string();
  if (text.empty()) return Value(false);
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    if (!Predicate(cp.value)) return Value(false);
    pos += cp.length;
  }
  return Value(true);
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_alpha(char32_t c) {
  return (c < 0x80 && std::isalpha(static_cast<int>(c))) || (c >= 0x80 && is_cased_letter(c));
}
bool is_alnum(char32_t c) { return is_digit(c) || is_alpha(c); }

Value split_lines(const std::string& text) {
  List lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find_first_of("\n\r", start);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
  }
  return Value(std::move(lines));
}

Value string_method(std::string_view name, Interpreter& interpreter, const Value& self, CallArgs& args);

Value dict_method(std::string_view name, const Value& self, CallArgs& args) {
  const Dict& dict = self.as_dict();
  List out;
  if (name == "get") {
    const Value* value = dict.find(argument_or(args, 0, "key", Value()));
    return value != nullptr ? *value : argument_or(args, 1, "default", Value(None{}));
  }
  for (const auto& [key, value] : dict.entries) {
    if (name == "keys")
      out.push_back(key);
    else if (name == "values")
      out.push_back(value);
    else
      out.push_back(Value::make_tuple(List{key, value}));
  }
  return Value(std::move(out));
}

// list.count(x) and list.index(x).
Value list_method(std::string_view name, const Value& self, CallArgs& args) {
  const Value item = argument_or(args, 0, "value", Value());
  const List& list = self.as_list();
  std::int64_t count = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!equals(list[i], item)) continue;
    if (name == "index") return Value(static_cast<std::int64_t>(i));
    ++count;
  }
  if (name == "index") fail_render("{} is not in list", repr(item));
  return Value(count);
}

constexpr std::string_view kStringMethods[] = {
    "strip",      "lstrip",  "rstrip",  "split",   "startswith",   "endswith",     "upper",     "lower",   "title",
    "capitalize", "replace", "format",  "join",    "count",        "find",         "rfind",     "isdigit", "isalpha",
    "isalnum",    "isspace", "islower", "isupper", "removeprefix", "removesuffix", "splitlines"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"count", "index"};
constexpr std::string_view kMutators[] = {"append", "extend",  "insert", "pop",        "remove", "clear",
                                          "sort",   "reverse", "update", "setdefault", "popitem"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::shared_ptr<const Callable> bound(const Value& receiver, std::string name,
                                      Value (*apply)(std::string_view, Interpreter&, const Value&, CallArgs&)) {
  auto callable = std::make_shared<Callable>();
  callable->name = fmt::format("{}.{}", type_name(receiver), name);
  callable->call = [receiver, name = std::move(name), apply](Interpreter& interpreter, CallArgs& args) {
    interpreter.count_steps();
    return apply(name, interpreter, receiver, args);
  };
  return callable;
}

}  // namespace

std::shared_ptr<const Callable> find_method(const Value& receiver, const std::string& name) {
  if (receiver.is_string() && listed(kStringMethods, name)) return bound(receiver, name, string_method);
  if (receiver.is_list() && listed(kListMethods, name))
    return bound(receiver, name, [](std::string_view n, Interpreter&, const Value& self, CallArgs& args) {
      return list_method(n, self, args);
    });
  if (receiver.is_dict() && listed(kDictMethods, name))
    return bound(receiver, name, [](std::string_view n, Interpreter&, const Value& self, CallArgs& args) {
      return dict_method(n, self, args);
    });
  return nullptr;
}

bool is_mutating_method(const Value& receiver, const std::string& name) {
  return (receiver.is_dict() || receiver.is_list()) && listed(kMutators, name);
}

namespace {

Value string_method(std::string_view name, Interpreter& interpreter, const Value& self, CallArgs& args) {
  const std::string& text = self.as_string();
  if (name == "strip") return strip_method(self, args, StripSide::kBoth);
  if (name == "lstrip") return strip_method(self, args, StripSide::kLeft);
  if (name == "rstrip") return strip_method(self, args, StripSide::kRight);
  if (name == "split") return split_method(interpreter, self, args);
  if (name == "startswith") return Value(affix_matches(self, argument_or(args, 0, "prefix", Value()), true));
  if (name == "endswith") return Value(affix_matches(self, argument_or(args, 0, "suffix", Value()), false));
  if (name == "upper") return Value(upper(text));
  if (name == "lower") return Value(lower(text));
  if (name == "title") return Value(python_title(text));
  if (name == "capitalize") return Value(capitalize(text));
  if (name == "replace") return replace_method(interpreter, self, args);
  if (name == "format") return Value(python_str_format(interpreter, text, args));
  if (name == "join") return join_method(interpreter, self, args);
  if (name == "count") return count_method(self, args);
  if (name == "find" || name == "rfind") return find_method_value(self, args, name == "rfind");
  if (name == "isdigit") return all_code_points<is_digit>(self);
  if (name == "isalpha") return all_code_points<is_alpha>(self);
  if (name == "isalnum") return all_code_points<is_alnum>(self);
  if (name == "isspace") return all_code_points<is_python_space>(self);
  if (name == "islower") return Value(lower(text) == text && upper(text) != text);
  if (name == "isupper") return Value(upper(text) == text && lower(text) != text);
  if (name == "splitlines") return split_lines(text);
  const std::string& affix = string_argument(argument_or(args, 0, "affix", Value()), name);
  if (name == "removeprefix") return Value(text.starts_with(affix) ? text.substr(affix.size()) : text);
  return Value(text.ends_with(affix) ? text.substr(0, text.size() - affix.size()) : text);
}

}  // namespace

}  // namespace pagedgen::jinja
