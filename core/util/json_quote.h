// JSON string quoting for everything pagedgen writes: escapes per RFC 8259 and replaces
// invalid UTF-8 with U+FFFD, so an output line is always valid JSON.
#pragma once

#include <string>
#include <string_view>

namespace pagedgen {

// Appends `text` as a quoted JSON string to `out`.
void append_json_string(std::string& out, std::string_view text);

inline std::string json_quote(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

}  // namespace pagedgen
