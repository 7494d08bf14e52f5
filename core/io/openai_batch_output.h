// The OpenAI batch output line format (what the OpenAI Batch API and `vllm run-batch`
// write), one compact JSON object per input line, fields always in this order:
//   {"id":"batch_req_N","custom_id":ID,"response":{"status_code":200,"request_id":"req_N",
//    "body":{"id":"chatcmpl-N","object":"chat.completion","created":0,"model":"...",
//            "choices":[{"index":0,"message":{"role":"assistant","content":"..."},
//                        "logprobs":null,"finish_reason":"stop"|"length"},...],
//            "usage":{"prompt_tokens":P,"completion_tokens":C,"total_tokens":P+C,
//                     "prompt_tokens_details":{"cached_tokens":K}}}},"error":null}
// A /v1/completions line answers {"id":"cmpl-N","object":"text_completion",...} with
// choices [{"index":0,"text":"...","logprobs":null,"finish_reason":...}]. When the request
// asked for log probabilities, "logprobs" is, for chat,
//   {"content":[{"token":"...","logprob":L,"bytes":[...],"top_logprobs":[{"token","logprob","bytes"},...]},...]}
// and for completions
//   {"tokens":[...],"token_logprobs":[...],"top_logprobs":[{"...":L,...},...],"text_offset":[...]}
// one entry per generated token (openai_batch_output.cpp has the details). An error line:
//   {"id":"batch_req_N","custom_id":ID|null,"response":{"status_code":400,"request_id":"req_N",
//    "body":{"error":{"message":"...","type":"invalid_request_error","param":null,"code":"..."}}},
//    "error":{"code":"...","message":"..."}}
// N is the input line number, so every id is deterministic (resumed and sharded runs give
// the same bytes) and an output line maps back to its input line; "created" is always 0
// for the same reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "io/output_record.h"

namespace pagedgen {

// The line without its trailing newline; `context` says chat or completion and the model.
std::string format_openai_batch_line(const OutputRecord& record, const RecordContext& context);

// The input line number N of a line's "batch_req_N" id, read from its text; nullopt when
// the id is not of that form.
std::optional<uint64_t> openai_batch_line_index(std::string_view id);

}  // namespace pagedgen
