// Values as JSON text, as Python's json.dumps writes them (transformers' tojson filter):
// separators, indent, sort_keys and ensure_ascii as json.dumps takes them; floats as
// Python's repr, NaN and Infinity as json.dumps spells them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "jinja/value.h"

namespace pagedgen::jinja {

struct JsonStyle {
  bool indented = false;
  std::string indent;                 // per level, when indented
  std::string item_separator = ", ";  // json.dumps' default; "," when indented
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// `check_size` is called with the text's size as it grows (a budget may stop it).
std::string to_json(const Value& value, const JsonStyle& style, const std::function<void(std::size_t)>& check_size);

}  // namespace pagedgen::jinja
