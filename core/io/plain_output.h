// The plain output line format, one compact JSON object per input line, fields always in
// this order so that output files compare byte for byte:
//   n = 1:  {"id":ID,"index":N,"text":"...","finish_reason":"stop"|"length",
//            "usage":{"prompt_tokens":P,"completion_tokens":C,"cached_tokens":K}}
//   n > 1:  {"id":ID,"index":N,"choices":[{"index":0,"text":"...","finish_reason":"..."},...],
//            "usage":{...}}   (completion_tokens sums over the choices)
//   error:  {"id":ID,"index":N,"error":{"code":"...","message":"..."}}
// With log probabilities asked ("logprobs": k), "logprobs" follows each "finish_reason":
//   [{"token":"...","id":T,"logprob":L,"top_logprobs":[{"token":"...","id":T,"logprob":L},...]},...]
// one entry per generated token, k alternatives each (token: its text, U+FFFD for the part
// of a character it splits; logprob: io/logprob_json.h).
// ID is the input's id JSON exactly as given, or null.
#pragma once

#include <string>

#include "io/output_record.h"

namespace pagedgen {

// The line without its trailing newline. The plain format echoes nothing of the context.
std::string format_plain_line(const OutputRecord& record, const RecordContext& context = {});

}  // namespace pagedgen
