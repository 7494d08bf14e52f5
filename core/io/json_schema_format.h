// The response format of a JSON Schema given as text (a request's json_schema.schema, or
// the file of --json-schema): the schema compacted, and checked to compile into a grammar
// (core/grammar), so that a schema the engine refuses is found where it is given, never
// once decoding has started.
#pragma once

#include <string_view>

#include "sample/response_format.h"
#include "util/stop_token.h"

namespace pagedgen {

// Throws Error when the text is not JSON, the schema is malformed or no value satisfies
// it; UnsupportedSchemaError (grammar/grammar_error.h) when it uses what structured outputs
// refuse. Messages name the keyword and its JSON pointer ("#/properties/id: 'pattern' ...").
// Throws Stopped when `stop` asks while the schema compiles.
ResponseFormat json_schema_format(std::string_view schema_text, const StopToken& stop = {});

}  // namespace pagedgen
