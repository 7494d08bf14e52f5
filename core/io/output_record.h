// What the output writer receives for each non-blank input line: the finished request
// (one Completion per sample) or the line's error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "io/request.h"
#include "sample/stop_checker.h"
#include "step/ids.h"

namespace pagedgen {

// A token in a log-probability entry: its id, the exact bytes it adds to the text (a
// special token's text included; may be part of a UTF-8 character) and its log probability
// (sample/token_logprobs.h: the model's log-softmax before sampling transforms).
struct LogprobToken {
  TokenId id = 0;
  std::string bytes;
  float logprob = 0.0f;
};

// One generated (or scored prompt) token's entry.
struct GeneratedTokenLogprobs {
  LogprobToken token;             // the generated token
  std::vector<LogprobToken> top;  // [k] the most likely tokens at that step, most likely first
  int64_t text_offset = 0;        // characters of decoded text before this token's
  int32_t rank = 1;               // the token's rank (token_logprobs.h: ids with a logit >= its own)
};

struct Completion {
  std::string text;  // final text (cut before a stop string)
  FinishReason finish_reason = FinishReason::kLength;
  int64_t num_tokens = 0;          // tokens this sample generated
  std::vector<TokenId> token_ids;  // [num_tokens] the generated tokens (not written out)
  // [num_tokens] when the request asked for log probabilities (SamplingParams::logprobs).
  std::optional<std::vector<GeneratedTokenLogprobs>> logprobs;
};

struct RequestOutput {
  uint64_t index = 0;                  // Request::index
  std::optional<std::string> id_json;  // Request::id_json, echoed verbatim (null when absent)
  std::vector<Completion> choices;     // [n], sample order
  int64_t prompt_tokens = 0;           // tokens of the prompt as decoded (template included)
  int64_t cached_tokens = 0;           // prompt tokens served from shared KV blocks
  // [prompt_tokens] with prompt_logprobs (its k alternatives): entry 0 is the first prompt
  // token, which nothing precedes (no log probability: written as null, no top); each
  // other its log probability given the tokens before it; text_offset in characters of
  // the prompt's decoded text.
  std::optional<std::vector<GeneratedTokenLogprobs>> prompt_logprobs;
  // OpenAI completions echo: the prompt's text, which each choice's text starts with, and
  // with logprobs its entries (as prompt_logprobs', logprobs' k alternatives), before the
  // choice's own.
  std::optional<std::string> echo_text;
  std::optional<std::vector<GeneratedTokenLogprobs>> echo_logprobs;
};

// Error lines reuse RequestError (the reader's, or one the engine makes, e.g. a prompt
// longer than the model's context).
using OutputRecord = std::variant<RequestOutput, RequestError>;

// What an output line echoes of its request beyond the record, for a format that answers
// in kind: the OpenAI batch format answers a messages line with a chat.completion object
// and names the body's model. Error lines and the plain format use none of it.
struct RecordContext {
  bool chat = false;  // the request was a conversation (messages)
  std::string model;  // the model name to report
};

inline uint64_t record_index(const OutputRecord& record) {
  return std::visit([](const auto& r) { return r.index; }, record);
}

}  // namespace pagedgen
