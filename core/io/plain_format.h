// The plain JSONL request format: {"id"?, "prompt" | "messages", sampling fields...} per
// line. Internal to core/io: request_parser.cpp calls it on each parsed line.
#pragma once

#include <simdjson.h>

#include <cstdint>

#include "io/request.h"
#include "io/response_format_field.h"
#include "util/stop_token.h"

namespace pagedgen {

// `document` holds the line, which starts at `line_begin` (for error offsets). Known keys:
// id (string, number or null), prompt (non-empty string), messages, the sampling fields
// of sampling_fields.h, response_format (read by `response_formats`) and logprobs (k, the
// alternatives per token). The keys refused_fields.h lists are unsupported_field unless
// neutral, and so are the OpenAI body's top_logprobs and max_completion_tokens (the plain
// format spells them logprobs and max_tokens); other top-level keys are ignored, so lines
// may carry metadata of their own. A bad line yields a RequestError
// (with the id when it could be read); nothing is thrown for one line's problems. `poll`
// ticks once per value and field read: Stopped when its token asks.
RequestItem parse_plain_request(simdjson::ondemand::document& document, const char* line_begin, uint64_t index,
                                const SamplingParams& defaults, json_fields::ResponseFormatReader& response_formats,
                                StopPoll& poll);

}  // namespace pagedgen
