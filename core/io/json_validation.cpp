#include "io/json_validation.h"

#include <fmt/format.h>

#include <algorithm>

#include "io/json_line_errors.h"
#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

// Ondemand reports a malformed literal as a type mismatch of the type its first byte
// announced; on a validated walk that mismatch can only mean bad syntax.
simdjson::error_code literal_error(od::json_type type) {
  return type == od::json_type::boolean ? simdjson::T_ATOM_ERROR : simdjson::N_ATOM_ERROR;
}

// A failed read: the line's JSON error, located in the line.
void check(simdjson::error_code error, od::document& document, const char* line_begin) {
  if (error) throw_json_error(error, document, line_begin);
}

// An object or list deeper than kMaxNestingLevels is refused, with where the walk is when
// the parser can tell.
void check_nesting(od::json_type type, int level, od::document& document, const char* line_begin) {
  if ((type != od::json_type::object && type != od::json_type::array) || level <= kMaxNestingLevels) return;
  const char* location = nullptr;
  const std::string where = document.current_location().get(location) == simdjson::SUCCESS && location > line_begin
                                ? fmt::format(" (near byte {})", location - line_begin)
                                : std::string();
  throw_line_error(request_error::kInvalidJson,
                   fmt::format("the line nests objects and lists deeper than {} levels, which pagedgen does "
                               "not read{}",
                               kMaxNestingLevels, where));
}

// Every field of the object at `path`, each key once, walked one level down.
void validate_object(od::value value, const std::string& path, od::document& document, const char* line_begin,
                     StopPoll& poll, int level) {
  od::object object;
  check(value.get_object().get(object), document, line_begin);
  SeenKeys keys;
  for (auto field : object) {
    std::string_view key;
    check(field.unescaped_key().get(key), document, line_begin);
    add_unique_key(keys, key, path);
    od::value child;
    check(field.value().get(child), document, line_begin);
    validate_value(child, path.empty() ? std::string(key) : fmt::format("{}.{}", path, key), document, line_begin, poll,
                   level + 1);
  }
}

// Every element of the list at `path`, walked one level down.
void validate_array(od::value value, const std::string& path, od::document& document, const char* line_begin,
                    StopPoll& poll, int level) {
  od::array array;
  check(value.get_array().get(array), document, line_begin);
  std::size_t i = 0;
  for (auto element : array) {
    od::value child;
    check(element.get(child), document, line_begin);
    validate_value(child, element_path(path, i++), document, line_begin, poll, level + 1);
  }
}

}  // namespace

void add_unique_key(SeenKeys& keys, std::string_view key, std::string_view path) {
  if (!keys.emplace(key).second)
    throw_line_error(request_error::kDuplicateField,
                     fmt::format("field \"{}\" appears twice{}", key, path.empty() ? "" : fmt::format(" in {}", path)));
}

void validate_value(od::value value, const std::string& path, od::document& document, const char* line_begin,
                    StopPoll& poll, int level) {
  poll.tick();
  od::json_type type{};
  check(value.type().get(type), document, line_begin);
  check_nesting(type, level, document, line_begin);
  switch (type) {
    case od::json_type::object:
      return validate_object(value, path, document, line_begin, poll, level);
    case od::json_type::array:
      return validate_array(value, path, document, line_begin, poll, level);
    // A scalar is read whole, so that a malformed number, string or literal is found.
    case od::json_type::number: {
      double number = 0;
      check(value.get_double().get(number), document, line_begin);
      return;
    }
    case od::json_type::string: {
      std::string_view text;
      check(value.get_string().get(text), document, line_begin);
      return;
    }
    case od::json_type::boolean: {
      bool flag = false;
      if (value.get_bool().get(flag)) check(literal_error(type), document, line_begin);
      return;
    }
    case od::json_type::null: {
      bool null = false;
      if (value.is_null().get(null) || !null) check(literal_error(type), document, line_begin);
      return;
    }
  }
}

}  // namespace pagedgen::json_fields
