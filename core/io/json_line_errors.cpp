#include "io/json_line_errors.h"

#include <fmt/format.h>

#include <optional>

#include "io/request.h"

namespace pagedgen::json_fields {

std::string_view short_json_message(simdjson::error_code error) {
  switch (error) {
    case simdjson::TAPE_ERROR:
      return "misplaced or missing comma, colon, brace or bracket";
    case simdjson::UNCLOSED_STRING:
      return "a string is never closed";
    case simdjson::STRING_ERROR:
      return "bad escape or control character in a string";
    case simdjson::UNESCAPED_CHARS:
      return "a control character (0x00-0x1F) in a string must be escaped, e.g. \\n or \\u0001";
    case simdjson::NUMBER_ERROR:
      return "malformed or out-of-range number";
    case simdjson::T_ATOM_ERROR:
      return "bad literal (expected true)";
    case simdjson::F_ATOM_ERROR:
      return "bad literal (expected false)";
    case simdjson::N_ATOM_ERROR:
      return "bad literal (expected null)";
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "unbalanced braces or brackets, or content after the object";
    case simdjson::DEPTH_ERROR:
      return "nested too deeply";
    case simdjson::EMPTY:
      return "no JSON value";
    default:
      return simdjson::error_message(error);
  }
}

void throw_line_error(std::string_view code, std::string message) { throw LineError{code, std::move(message)}; }

void throw_json_error(simdjson::error_code error, od::document& document, const char* line_begin) {
  const char* location = nullptr;
  // Offset 0 is also what simdjson reports when it has no better position: leave it out.
  if (document.current_location().get(location) == simdjson::SUCCESS && location > line_begin)
    throw_line_error(request_error::kInvalidJson, fmt::format("the line is not valid JSON: {} (near byte {})",
                                                              short_json_message(error), location - line_begin));
  throw_line_error(request_error::kInvalidJson,
                   fmt::format("the line is not valid JSON: {}", short_json_message(error)));
}

namespace {

// Where in `line` the string error that iterate() reported lies: the first raw control
// character inside a string (UNESCAPED_CHARS), or the quote that opens the string never
// closed (UNCLOSED_STRING). nullopt for other errors or when the scan does not find it.
std::optional<std::size_t> string_error_offset(simdjson::error_code error, std::string_view line) {
  bool in_string = false;
  std::size_t opening_quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto byte = static_cast<unsigned char>(line[i]);
    if (!in_string) {
      if (byte == '"') {
        in_string = true;
        opening_quote = i;
      }
    } else if (byte == '\\') {
      ++i;  // the escaped byte cannot end the string
    } else if (byte == '"') {
      in_string = false;
    } else if (byte < 0x20 && error == simdjson::UNESCAPED_CHARS) {
      return i;
    }
  }
  if (in_string && error == simdjson::UNCLOSED_STRING) return opening_quote;
  return std::nullopt;
}

}  // namespace

void throw_unparsed_json_error(simdjson::error_code error, std::string_view line) {
  if (const std::optional<std::size_t> offset = string_error_offset(error, line))
    throw_line_error(request_error::kInvalidJson,
                     fmt::format("the line is not valid JSON: {} (near byte {})", short_json_message(error), *offset));
  throw_line_error(request_error::kInvalidJson,
                   fmt::format("the line is not valid JSON: {}", short_json_message(error)));
}

}  // namespace pagedgen::json_fields
