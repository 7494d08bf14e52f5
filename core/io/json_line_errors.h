// The error of one input line while its JSON is read: LineError, and the messages for
// simdjson's errors (with the byte offset where it stopped). Internal to core/io (the input
// formats share it); simdjson types never appear in a header outside core/io.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace pagedgen::json_fields {

namespace od = simdjson::ondemand;

// A problem with one input line; the request parser turns it into a RequestError.
struct LineError {
  std::string_view code;  // request_error::k*
  std::string message;
};

[[noreturn]] void throw_line_error(std::string_view code, std::string message);

// A few words on what is wrong for a simdjson parse error ("unbalanced braces or ...").
std::string_view short_json_message(simdjson::error_code error);

// Throws LineError(invalid_json) for a simdjson error met while walking a document that
// iterate() accepted. `document` and `line_begin` let the message give the byte offset
// where simdjson stopped, when it knows it.
[[noreturn]] void throw_json_error(simdjson::error_code error, od::document& document, const char* line_begin);

// Throws LineError(invalid_json) for an error of iterate() itself (a raw control character
// or an unclosed string, found before any value is read). Such a document was never
// started and must not be asked where it stopped: the offset is found in `line` instead.
[[noreturn]] void throw_unparsed_json_error(simdjson::error_code error, std::string_view line);

}  // namespace pagedgen::json_fields
