// The functions a template can call by name: range (bounded as jinja2's sandbox bounds
// it), namespace, dict, and transformers' raise_exception and strftime_now.
#include <fmt/format.h>

#include "jinja/arguments.h"
#include "jinja/interpreter.h"
#include "jinja/strftime.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr std::uint64_t kMaxRange = 100'000;

Value range(Interpreter& interpreter, CallArgs& args) {
  if (args.positional.empty() || args.positional.size() > 3) fail_render("range expected 1 to 3 arguments");
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::int64_t stop;
  if (args.positional.size() == 1) {
    stop = int_argument(args.positional[0], "range's stop");
  } else {
    start = int_argument(args.positional[0], "range's start");
    stop = int_argument(args.positional[1], "range's stop");
    if (args.positional.size() == 3) step = int_argument(args.positional[2], "range's step");
  }
  if (step == 0) fail_render("range() arg 3 must not be zero");
  // The length in unsigned 64 bits: stop - start may not fit in a signed one.
  const bool empty = step > 0 ? stop <= start : stop >= start;
  const std::uint64_t span = empty      ? 0
                             : step > 0 ? static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start)
                                        : static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
  const std::uint64_t magnitude = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
  const std::uint64_t length = span / magnitude + (span % magnitude != 0 ? 1 : 0);
  if (length > kMaxRange)
    fail_render("range too big: the sandbox blocks ranges larger than {} items, as jinja2's does", kMaxRange);
  interpreter.count_steps(length);
  List items;
  items.reserve(length);
  for (std::uint64_t i = 0; i < length; ++i) items.emplace_back(start + static_cast<std::int64_t>(i) * step);
  return Value(std::move(items));
}

Dict keyword_dict(const CallArgs& args) {
  Dict dict;
  for (const Value& positional : args.positional) {
    if (positional.is_dict()) {
      for (const auto& [key, value] : positional.as_dict().entries) dict.set(key, value);
    } else {
      for (const Value& pair : iterate(positional)) {
        const List items = iterate(pair);
        if (items.size() != 2) fail_render("dict update sequence element has length {}; 2 is required", items.size());
        dict.set(items[0], items[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keywords) dict.set(Value(key), value);
  return dict;
}

Value namespace_function(Interpreter& interpreter, CallArgs& args) {
  Namespace& ns = interpreter.make_namespace();
  ns.attributes = keyword_dict(args);
  return Value(&ns);
}

Value dict_function(Interpreter&, CallArgs& args) { return Value(keyword_dict(args)); }

Value raise_exception(Interpreter&, CallArgs& args) {
  throw Failure(to_text(argument_or(args, 0, "message", Value(""))));
}

Value strftime_now(Interpreter& interpreter, CallArgs& args) {
  const std::string& format = string_argument(argument_or(args, 0, "format", Value()), "strftime_now's format");
  std::string out = format_date(format, interpreter.today());
  interpreter.check_string_size(out.size());
  return Value(std::move(out));
}

void add(Scope& scope, std::string name, Value (*function)(Interpreter&, CallArgs&)) {
  auto callable = std::make_shared<Callable>();
  callable->name = name;
  callable->call = function;
  scope.set(name, Value(std::shared_ptr<const Callable>(std::move(callable))));
}

}  // namespace

void add_globals(Scope& scope) {
  add(scope, "range", range);
  add(scope, "namespace", namespace_function);
  add(scope, "dict", dict_function);
  add(scope, "raise_exception", raise_exception);
  add(scope, "strftime_now", strftime_now);
}

}  // namespace pagedgen::jinja
