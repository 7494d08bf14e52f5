// The OpenAI batch request format, as the OpenAI Batch API and `vllm run-batch` read it:
//   {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions" | "/v1/completions",
//    "body": {"model"?, "messages" (chat) | "prompt" (completions), sampling fields...}}
// Internal to core/io: request_parser.cpp calls it on each parsed line.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>

#include "io/request.h"
#include "io/response_format_field.h"

namespace pagedgen {

inline constexpr std::string_view kChatCompletionsUrl = "/v1/chat/completions";
inline constexpr std::string_view kCompletionsUrl = "/v1/completions";

// `document` holds the line, which starts at `line_begin`. The body's sampling fields are
// the plain format's (sampling_fields.h) plus max_completion_tokens (an alias of max_tokens;
// giving both is an error), response_format (read by `response_formats`) and logprobs:
// true/false with top_logprobs: k in a chat body, logprobs: k in a completions body;
// "model" is recorded in Request::model. Keys pagedgen cannot honour (refused_fields.h:
// stream, tools, audio, ...) are unsupported_field unless they hold their neutral value;
// other keys are ignored. A line of the plain format is wrong_format. Nothing is thrown
// for one line's problems. `poll` ticks once per value and field read: Stopped when its
// token asks.
RequestItem parse_openai_batch_request(simdjson::ondemand::document& document, const char* line_begin, uint64_t index,
                                       const SamplingParams& defaults,
                                       json_fields::ResponseFormatReader& response_formats, StopPoll& poll);

// Whether a parsed line looks like this format (a top-level custom_id, method, url or body):
// how an input's format is detected from its first line that is a JSON object.
bool looks_like_openai_batch_line(simdjson::ondemand::document& document);

}  // namespace pagedgen
