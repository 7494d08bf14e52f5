// Typed reads of one JSON value of a validated line (json_validation.h), with errors that
// name the field by its path and say what it allows. Internal to core/io.
#pragma once

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/json_line_errors.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace od = simdjson::ondemand;

std::string_view type_name(od::json_type type);
// The value's JSON type; the line was validated first, so this does not fail.
od::json_type type_of(od::value& value);
// The token's JSON text without the whitespace that follows it.
std::string_view token_text(od::value& value);
// Throws LineError(invalid_type): "<path> must be <expected>, got <type>".
[[noreturn]] void wrong_type(std::string_view path, std::string_view expected, od::json_type got);

std::string read_string(od::value value, std::string_view path);
double read_number(od::value value, std::string_view path);
// Integers are exact JSON integers: 5 is one, 5.0 and 5e0 are not (as in the OpenAI API).
int32_t read_int32(od::value value, std::string_view path);
uint64_t read_uint64(od::value value, std::string_view path);
bool read_bool(od::value value, std::string_view path);

// The path of a list's element i: "stop[2]".
inline std::string element_path(std::string_view path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

// A list read element by element with `read(value, path)`; `expected` names the list in a
// type error.
template <typename Read>
auto read_list(od::value value, std::string_view path, std::string_view expected, Read read) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::array) wrong_type(path, expected, type);
  od::array array;
  if (value.get_array().get(array)) throw_line_error(request_error::kInvalidJson, "bad list");
  std::vector<decltype(read(od::value{}, std::string_view{}))> items;
  std::size_t i = 0;
  for (auto element : array) {
    od::value item;
    if (element.get(item)) throw_line_error(request_error::kInvalidJson, "bad list");
    items.push_back(read(item, element_path(path, i++)));
  }
  return items;
}

}  // namespace pagedgen::json_fields
