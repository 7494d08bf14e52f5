// The built-in filters and tests, by the names jinja2 gives them; each file of them
// registers its own (filters_text.cpp, filters_sequence.cpp, filters_value.cpp, tests.cpp).
#pragma once

#include <string_view>
#include <utility>

#include "jinja/ast.h"

namespace pagedgen::jinja {

using FilterEntry = std::pair<std::string_view, FilterFunction>;
using TestEntry = std::pair<std::string_view, TestFunction>;

FilterFunction find_text_filter(std::string_view name);
FilterFunction find_sequence_filter(std::string_view name);
FilterFunction find_value_filter(std::string_view name);

// Applies the test or filter `name` as select/map do; fails when there is none.
bool apply_test(Interpreter& interpreter, std::string_view name, const Value& value, CallArgs& args);
Value apply_filter(Interpreter& interpreter, std::string_view name, const Value& value, CallArgs& args);

}  // namespace pagedgen::jinja
