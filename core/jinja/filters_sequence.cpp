// Filters on sequences: length, first, last, join, list, items, select, reject,
// selectattr, rejectattr, map, unique, sort, reverse, sum, min, max, dictsort.
#include <fmt/format.h>

#include <algorithm>

#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

Value length(Interpreter&, const Value& input, CallArgs&) {
  if (input.is_string()) return Value(static_cast<std::int64_t>(code_point_count(input.as_string())));
  if (input.is_list()) return Value(static_cast<std::int64_t>(input.as_list().size()));
  if (input.is_dict()) return Value(static_cast<std::int64_t>(input.as_dict().entries.size()));
  if (input.is_undefined()) return Value(0);
  if (input.is_namespace()) return Value(static_cast<std::int64_t>(input.as_namespace().attributes.entries.size()));
  fail_render("object of type '{}' has no len()", type_name(input));
}

Value first(Interpreter&, const Value& input, CallArgs&) {
  const List items = iterate(input);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value last(Interpreter&, const Value& input, CallArgs&) {
  const List items = iterate(input);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// jinja2's attribute getter: "a.b.0" looks up a, then b, then item 0.
Value lookup_path(const Value& item, const Value& path) {
  if (!path.is_string()) return get_item(item, path);
  Value current = item;
  std::string_view rest = path.as_string();
  for (;;) {
    const std::size_t dot = rest.find('.');
    const std::string part(rest.substr(0, dot));
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = digits && part.size() < 18 ? get_item(current, Value(static_cast<std::int64_t>(std::stoll(part))))
                                         : get_item(current, Value(part));
    if (dot == std::string_view::npos) return current;
    rest.remove_prefix(dot + 1);
  }
}

Value join(Interpreter& interpreter, const Value& input, CallArgs& args) {
  const std::string separator = to_text(argument_or(args, 0, "d", Value("")));
  const Value* attribute = argument(args, 1, "attribute");
  std::string out;
  bool first_item = true;
  for (const Value& item : iterate(input)) {
    if (!first_item) out += separator;
    first_item = false;
    out += to_text(attribute != nullptr ? lookup_path(item, *attribute) : item);
    interpreter.check_growing_size(out.size());
  }
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

Value list(Interpreter&, const Value& input, CallArgs&) { return Value(iterate(input)); }

Value items(Interpreter&, const Value& input, CallArgs&) {
  if (input.is_undefined()) return Value(List{});
  if (!input.is_dict()) fail_render("items: can only get items from a mapping, not '{}'", type_name(input));
  List out;
  for (const auto& [key, value] : input.as_dict().entries) out.push_back(Value::make_tuple(List{key, value}));
  return Value(std::move(out));
}

// select / reject / selectattr / rejectattr: the items whose test (or truth) is `keep`.
Value select_items(Interpreter& interpreter, const Value& input, CallArgs& args, bool by_attribute, bool keep) {
  CallArgs test_args;
  const std::size_t test_at = by_attribute ? 1 : 0;
  if (args.positional.size() > test_at + 1)
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(test_at + 1),
                                args.positional.end());
  List out;
  if (!truthy(input)) return Value(std::move(out));  // jinja2 walks only a true sequence: none selects nothing
  for (const Value& item : iterate(input)) {
    interpreter.count_steps();
    const Value subject = by_attribute ? lookup_path(item, argument_or(args, 0, "attribute", Value())) : item;
    const bool passes =
        args.positional.size() > test_at
            ? apply_test(interpreter, string_argument(args.positional[test_at], "the test name"), subject, test_args)
            : truthy(subject);
    if (passes == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value select(Interpreter& i, const Value& input, CallArgs& args) { return select_items(i, input, args, false, true); }
Value reject(Interpreter& i, const Value& input, CallArgs& args) { return select_items(i, input, args, false, false); }
Value selectattr(Interpreter& i, const Value& input, CallArgs& args) {
  return select_items(i, input, args, true, true);
}
Value rejectattr(Interpreter& i, const Value& input, CallArgs& args) {
  return select_items(i, input, args, true, false);
}

Value map(Interpreter& interpreter, const Value& input, CallArgs& args) {
  List out;
  if (!truthy(input)) return Value(std::move(out));
  const Value* attribute = argument(args, args.positional.size(), "attribute");
  if (attribute != nullptr) {
    const Value* fallback = argument(args, args.positional.size(), "default");
    for (const Value& item : iterate(input)) {
      Value value = lookup_path(item, *attribute);
      out.push_back(value.is_undefined() && fallback != nullptr ? *fallback : value);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty()) fail_render("map requires a filter argument");
  const std::string name = string_argument(args.positional[0], "map's filter name");
  CallArgs filter_args{List(args.positional.begin() + 1, args.positional.end()), args.keywords};
  for (const Value& item : iterate(input)) {
    interpreter.count_steps();
    CallArgs call_args = filter_args;
    out.push_back(apply_filter(interpreter, name, item, call_args));
  }
  return Value(std::move(out));
}

// The key sort, unique, min and max compare by: the attribute, lower-cased unless
// case_sensitive.
Value sort_key(const Value& item, const Value* attribute, bool case_sensitive) {
  Value key = attribute != nullptr && !attribute->is_none() ? lookup_path(item, *attribute) : item;
  if (!case_sensitive && key.is_string()) return Value(lower(key.as_string()));
  return key;
}

Value sort(Interpreter& interpreter, const Value& input, CallArgs& args) {
  const bool reverse = truthy(argument_or(args, 0, "reverse", Value(false)));
  const bool case_sensitive = truthy(argument_or(args, 1, "case_sensitive", Value(false)));
  const Value* attribute = argument(args, 2, "attribute");
  List items = iterate(input);
  interpreter.count_steps(items.size());
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) keyed.emplace_back(sort_key(item, attribute, case_sensitive), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  List out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value(std::move(out));
}

Value unique(Interpreter& interpreter, const Value& input, CallArgs& args) {
  const bool case_sensitive = truthy(argument_or(args, 0, "case_sensitive", Value(false)));
  const Value* attribute = argument(args, 1, "attribute");
  List seen;
  List out;
  for (const Value& item : iterate(input)) {
    interpreter.count_steps(seen.size() + 1);
    Value key = sort_key(item, attribute, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value(std::move(out));
}

Value reverse(Interpreter&, const Value& input, CallArgs&) {
  List items = iterate(input);
  std::reverse(items.begin(), items.end());
  if (!input.is_string()) return Value(std::move(items));
  std::string out;
  for (const Value& c : items) out += c.as_string();
  return Value(std::move(out));
}

Value sum(Interpreter& interpreter, const Value& input, CallArgs& args) {
  const Value* attribute = argument(args, 0, "attribute");
  Value total = argument_or(args, 1, "start", Value(0));
  for (const Value& item : iterate(input))
    total = binary_operation(interpreter, "+", total, attribute != nullptr ? lookup_path(item, *attribute) : item);
  return total;
}

Value extreme(const Value& input, CallArgs& args, bool want_max) {
  const bool case_sensitive = truthy(argument_or(args, 0, "case_sensitive", Value(false)));
  const Value* attribute = argument(args, 1, "attribute");
  const List items = iterate(input);
  if (items.empty()) return Value::undefined(fmt::format("No aggregated item, sequence was empty."));
  std::size_t best = 0;
  for (std::size_t i = 1; i < items.size(); ++i) {
    const Value a = sort_key(items[i], attribute, case_sensitive);
    const Value b = sort_key(items[best], attribute, case_sensitive);
    if (want_max ? less(b, a) : less(a, b)) best = i;
  }
  return items[best];
}

Value min(Interpreter&, const Value& input, CallArgs& args) { return extreme(input, args, false); }
Value max(Interpreter&, const Value& input, CallArgs& args) { return extreme(input, args, true); }

Value dictsort(Interpreter& interpreter, const Value& input, CallArgs& args) {
  if (input.is_undefined()) throw Failure(input.undefined_hint());
  const bool case_sensitive = truthy(argument_or(args, 0, "case_sensitive", Value(false)));
  const bool by_value = to_text(argument_or(args, 1, "by", Value("key"))) == "value";
  const bool reverse = truthy(argument_or(args, 2, "reverse", Value(false)));
  CallArgs sort_args{{Value(reverse), Value(case_sensitive), Value(by_value ? 1 : 0)}, {}};
  return sort(interpreter, items(interpreter, input, args), sort_args);
}

constexpr FilterEntry kSequenceFilters[] = {
    {"length", length}, {"count", length}, {"first", first},           {"last", last},
    {"join", join},     {"list", list},    {"items", items},           {"select", select},
    {"reject", reject}, {"map", map},      {"selectattr", selectattr}, {"rejectattr", rejectattr},
    {"unique", unique}, {"sort", sort},    {"reverse", reverse},       {"sum", sum},
    {"min", min},       {"max", max},      {"dictsort", dictsort},
};

}  // namespace

FilterFunction find_sequence_filter(std::string_view name) {
  for (const auto& [key, function] : kSequenceFilters)
    if (key == name) return function;
  return nullptr;
}

}  // namespace pagedgen::jinja
