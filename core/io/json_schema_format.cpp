#include "io/json_schema_format.h"

#include <simdjson.h>

#include <string>

#include "grammar/json_grammar.h"
#include "util/error.h"

namespace pagedgen {

ResponseFormat json_schema_format(std::string_view schema_text, const StopToken& stop) {
  // Compact first, so that one schema written with other whitespace is the same format
  // (and compiles once).
  std::string compact(schema_text.size(), '\0');
  std::size_t compact_size = 0;
  if (const simdjson::error_code error =
          simdjson::minify(schema_text.data(), schema_text.size(), compact.data(), compact_size))
    fail("the JSON schema is not valid JSON: {}", simdjson::error_message(error));
  compact.resize(compact_size);
  (void)json_schema_grammar(compact, stop);
  return ResponseFormat{ResponseFormat::Type::kJsonSchema, std::move(compact)};
}

}  // namespace pagedgen
