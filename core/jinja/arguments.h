// Reading the arguments of a built-in (a filter, a test, a method, a global) by position
// or keyword, as Python binds them.
#pragma once

#include <cstddef>
#include <string_view>

#include "jinja/value.h"

namespace pagedgen::jinja {

// The argument at `position` or named `name`; null when not given.
inline const Value* argument(const CallArgs& args, std::size_t position, std::string_view name) {
  if (position < args.positional.size()) return &args.positional[position];
  for (const auto& [key, value] : args.keywords)
    if (key == name) return &value;
  return nullptr;
}

inline Value argument_or(const CallArgs& args, std::size_t position, std::string_view name, Value fallback) {
  const Value* value = argument(args, position, name);
  return value != nullptr ? *value : fallback;
}

// A str argument (a copy: the argument is often a temporary); fails naming `what` when it
// is another type.
inline std::string string_argument(const Value& value, std::string_view what) {
  if (!value.is_string()) fail_render("{} must be a str, not '{}'", what, type_name(value));
  return value.as_string();
}

inline std::int64_t int_argument(const Value& value, std::string_view what) {
  if (!value.is_int() && !value.is_bool()) fail_render("{} must be an int, not '{}'", what, type_name(value));
  return integer_of(value);
}

}  // namespace pagedgen::jinja
