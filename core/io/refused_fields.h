// Request keys that would change what the output should be and that pagedgen does not do
// (streaming, tool calls, audio, beam search, ...): a line that gives one with anything
// but its neutral value is an unsupported_field error naming it, so that nothing a user
// asked for is silently ignored. Both input formats check them (the OpenAI batch format in
// its body). Keys that only describe a request (model, metadata, user, store, ...) and
// unknown keys pass; README "Request fields" lists both kinds. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string_view>

namespace pagedgen::json_fields {

// Whether `key` is a refused key. Throws LineError(unsupported_field) naming `path` when it
// is and `value` is not its neutral value (null, false, 0, "", [], {}, or the key's own
// default: 1 for best_of, true for parallel_tool_calls, ["text"] for modalities, ...).
bool check_refused_field(std::string_view key, simdjson::ondemand::value value, std::string_view path);

}  // namespace pagedgen::json_fields
