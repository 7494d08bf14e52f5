// Filters and tests by name, for the parser and for select/map, which name them in strings.
#include "jinja/builtins.h"

#include <fmt/format.h>

#include "jinja/interpreter.h"

namespace pagedgen::jinja {

FilterFunction find_filter(std::string_view name) {
  if (FilterFunction function = find_text_filter(name)) return function;
  if (FilterFunction function = find_sequence_filter(name)) return function;
  return find_value_filter(name);
}

bool apply_test(Interpreter& interpreter, std::string_view name, const Value& value, CallArgs& args) {
  const TestFunction test = find_test(name);
  if (test == nullptr) fail_render("unknown test '{}'", name);
  return test(interpreter, value, args);
}

Value apply_filter(Interpreter& interpreter, std::string_view name, const Value& value, CallArgs& args) {
  const FilterFunction filter = find_filter(name);
  if (filter == nullptr) fail_render("unknown filter '{}'", name);
  interpreter.count_steps();
  return filter(interpreter, value, args);
}

}  // namespace pagedgen::jinja
