// What every request format does around its own fields. Pass 1: check the whole line (one
// JSON object, valid to its last byte, no key twice) and read the key that identifies it
// ("id" in the plain format, "custom_id" in the OpenAI batch format), so that an error
// found later still names it. Last: the Request of an identified line. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "io/request.h"
#include "util/stop_token.h"

namespace pagedgen::json_fields {

// The key that identifies a line.
struct IdKey {
  std::string_view name;  // "id" or "custom_id"
  bool allow_number;      // plain ids may be numbers; OpenAI's custom_id is a string
};

struct LineIdentity {
  std::optional<std::string> id_json;  // the id's JSON text as written; nullopt when absent or null
  std::string seed_key;                // Request::seed_key: the decoded string, a number's text, or "#<index>"
};

// Throws LineError: invalid_json, duplicate_field, invalid_type when the line is no object
// (the message says a line must be "a JSON object <shape>") or when the id has a type the
// key does not allow (reported only once the line is known to be valid JSON). `poll` ticks
// once per value of the line.
LineIdentity read_line_identity(simdjson::ondemand::document& document, const char* line_begin, uint64_t index,
                                IdKey id_key, std::string_view shape, StopPoll& poll);

// Reads one line of a format: pass 1 (read_line_identity), then `read_fields` on the line's
// object, rewound, to make its Request. Every LineError thrown by either pass becomes the
// line's RequestError (naming the id once pass 1 has read it). Both passes tick `poll`, and
// its Stopped goes through.
using FieldReader = std::function<Request(const LineIdentity& identity, simdjson::ondemand::object& object)>;
RequestItem parse_identified_line(simdjson::ondemand::document& document, const char* line_begin, uint64_t index,
                                  IdKey id_key, std::string_view shape, const FieldReader& read_fields, StopPoll& poll);

// The Request of line `index` once its fields are read; throws LineError(invalid_value)
// naming the first sampling value out of range.
Request make_request(uint64_t index, const LineIdentity& identity, decltype(Request::input) input,
                     SamplingParams sampling);

}  // namespace pagedgen::json_fields
