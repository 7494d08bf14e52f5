// The fields that constrain a line's text, in both input formats (a plain line's keys, an
// OpenAI batch body's): OpenAI's response_format (response_format_field.h) and vLLM's
//   guided_json: a JSON Schema (an object, or its JSON text in a string)
//   guided_regex: a regex the whole text matches (grammar/regex_parser.h)
//   guided_choice: a non-empty list of strings, the text exactly one of them
//   guided_grammar: a GBNF grammar (grammar/gbnf_grammar.h)
//   structured_outputs: {"json" | "regex" | "choice" | "grammar" | "json_object": true, ...}
// A null value is as if the key were absent, and so is response_format {"type": "text"}
// beside another. A line may give one constraint: a second is conflicting_fields, naming
// both. A line's constraint wins over the command line's default (--json-schema, --regex,
// ...). Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "io/response_format_field.h"
#include "sample/response_format.h"
#include "util/stop_token.h"

namespace pagedgen::json_fields {

// The constraint field a line has given so far (empty: none).
struct LineConstraint {
  std::string path;
};

// Reads `key` into `format` when it is one of the fields above and returns true; false
// for any other key. `path` names the field in messages ("guided_regex",
// "body.structured_outputs"). Throws LineError; Stopped when `stop` asks.
bool read_constraint_field(std::string_view key, od::value value, std::string_view path, ResponseFormatReader& reader,
                           LineConstraint& constraint, ResponseFormat& format, const StopToken& stop);

}  // namespace pagedgen::json_fields
