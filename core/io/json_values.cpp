#include "io/json_values.h"

#include <fmt/format.h>

#include "io/json_line_errors.h"
#include "io/request.h"

namespace pagedgen::json_fields {

std::string_view type_name(od::json_type type) {
  switch (type) {
    case od::json_type::array:
      return "a list";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
  }
  return "an unknown type";
}

od::json_type type_of(od::value& value) {
  od::json_type type{};
  if (value.type().get(type)) throw_line_error(request_error::kInvalidJson, "the line is not valid JSON");
  return type;
}

std::string_view token_text(od::value& value) {
  std::string_view text = value.raw_json_token();
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

void wrong_type(std::string_view path, std::string_view expected, od::json_type got) {
  throw_line_error(request_error::kInvalidType, fmt::format("{} must be {}, got {}", path, expected, type_name(got)));
}

std::string read_string(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::string) wrong_type(path, "a string", type);
  std::string_view text;
  if (value.get_string().get(text)) throw_line_error(request_error::kInvalidJson, "bad string");
  return std::string(text);
}

double read_number(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "a number", type);
  double number = 0;
  if (value.get_double().get(number)) throw_line_error(request_error::kInvalidJson, "bad number");
  return number;
}

// Integers are exact JSON integers: 5 is one, 5.0 and 5e0 are not (as in the OpenAI API).
int32_t read_int32(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "an integer", type);
  const std::string_view text = token_text(value);
  if (text.find_first_of(".eE") != std::string_view::npos)
    throw_line_error(request_error::kInvalidType, fmt::format("{} must be an integer, got {}", path, text));
  int64_t number = 0;
  if (value.get_int64().get(number) || number < INT32_MIN || number > INT32_MAX)
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{} must be an integer in [{}, {}], got {}", path, INT32_MIN, INT32_MAX, text));
  return static_cast<int32_t>(number);
}

uint64_t read_uint64(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "an integer", type);
  const std::string_view text = token_text(value);
  if (text.find_first_of(".eE") != std::string_view::npos)
    throw_line_error(request_error::kInvalidType, fmt::format("{} must be an integer, got {}", path, text));
  uint64_t number = 0;
  if (text.starts_with('-') || value.get_uint64().get(number))
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{} must be an integer in [0, {}], got {}", path, UINT64_MAX, text));
  return number;
}

bool read_bool(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::boolean) wrong_type(path, "true or false", type);
  bool flag = false;
  if (value.get_bool().get(flag)) throw_line_error(request_error::kInvalidJson, "bad literal");
  return flag;
}

}  // namespace pagedgen::json_fields
