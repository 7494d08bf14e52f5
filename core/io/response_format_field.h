// Reading a request's response_format (structured outputs), in both input formats:
//   {"type": "text"}            free text (as if absent, also over --json-schema/--json-object)
//   {"type": "json_object"}     any JSON object
//   {"type": "json_schema", "json_schema": {"name": "...", "schema": {...},
//                                           "strict": true|false|null, "description": "..."}}
// The schema is always enforced ("strict" is read, and changes nothing). A schema the
// grammar refuses is unsupported_field, a malformed one invalid_value, both naming the
// keyword and its JSON pointer; keys this reader does not know are unsupported_field.
// Each distinct constraint (a schema, and the regexes, choices and grammars of
// guided_fields.h) is checked once per reader, so a file whose lines repeat one compiles it
// once here. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "io/json_line_errors.h"
#include "sample/response_format.h"
#include "util/stop_token.h"

namespace pagedgen::json_fields {

// The JSON text of a schema value: an object's, or `true` / `false`. Throws LineError
// invalid_type naming `path` for anything else.
std::string_view schema_text(od::value value, std::string_view path);

class ResponseFormatReader {
 public:
  // `value` is the field's (not null); `path` names it in messages ("response_format",
  // "body.response_format"). Throws LineError; Stopped when `stop` asks while a schema
  // compiles (nothing is kept of that schema then).
  ResponseFormat read(od::value value, std::string_view path, const StopToken& stop = {});

  // The format of the constraint `spec` of `type` (a JSON Schema compacted first), checked
  // to compile. Throws LineError naming `path`: unsupported_field for what the grammar
  // refuses, invalid_value for what is malformed or admits no text.
  ResponseFormat checked(ResponseFormat::Type type, std::string_view spec, std::string_view path,
                         const StopToken& stop = {});

 private:
  // json_schema's object at `path`: its name checked, its schema's format.
  ResponseFormat read_json_schema(od::value value, const std::string& path, const StopToken& stop);

  // A constraint's check: its format, or what is wrong with it (the message after its path).
  using Checked = std::variant<ResponseFormat, LineError>;
  const Checked& check(ResponseFormat::Type type, std::string_view spec, const StopToken& stop);

  // (type, text as written) -> its check; emptied when it reaches kMaxCachedSchemas, so an
  // input of ever new constraints holds a bounded number.
  static constexpr std::size_t kMaxCachedSchemas = 256;
  std::unordered_map<std::string, Checked> checked_;
};

}  // namespace pagedgen::json_fields
