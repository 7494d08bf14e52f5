// Grammars for structured outputs: the values of a JSON Schema (json_schema.h), or any
// JSON object (response_format "json_object"). The text has one fixed form so that outputs
// are reproducible:
//   - compact: no whitespace outside strings (`{"a":[1,2],"b":null}`);
//   - object keys in schema order (`properties` order), optional ones skipped or present in
//     place, additional keys (where allowed) after them;
//   - enum and const values as their compact JSON text (simdjson's minify);
//   - numbers that every common parser reads exactly (json_number_rules.h).
// Inside strings any character may appear, raw (well-formed UTF-8) or escaped.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "util/stop_token.h"

namespace pagedgen {

// Throws Error for schemas parse_json_schema refuses and schemas no value satisfies;
// UnsupportedSchemaError (grammar_error.h) for refused keywords and for schemas too large
// to compile (GrammarBuilder::kMaxNodes); Stopped when `stop` asks (read every few thousand
// rules built).
Grammar json_schema_grammar(const JsonSchema& schema, const StopToken& stop = {});
Grammar json_schema_grammar(std::string_view schema_text, const StopToken& stop = {});

// Any JSON object, nested to any depth.
Grammar json_object_grammar();

}  // namespace pagedgen
