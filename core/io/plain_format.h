// The plain JSONL request format: {"id"?, "prompt" | "messages", sampling fields...} per
// line. Internal to core/io: request_parser.cpp calls it on each parsed line.
#pragma once

#include <simdjson.h>

#include <cstdint>

#include "io/request.h"
#include "io/response_format_field.h"

namespace pagedgen {

// `document` holds the line, which starts at `line_begin` (for error offsets). Known keys:
// id (string, number or null), prompt (non-empty string), messages, the sampling fields
// of json_fields.h and response_format (read by `response_formats`); other top-level keys
// are ignored, so lines may carry metadata of their own. A bad line yields a RequestError
// (with the id when it could be read); nothing is thrown for one line's problems.
RequestItem parse_plain_request(simdjson::ondemand::document& document, const char* line_begin,
                                uint64_t index, const SamplingParams& defaults,
                                json_fields::ResponseFormatReader& response_formats);

}  // namespace pagedgen
