// RequestParser: one input line -> a Request or a RequestError, for a given input format.
// Never throws for a bad line: every problem of the line becomes its RequestError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "io/request.h"
#include "sample/sampling_params.h"
#include "util/stop_token.h"

namespace pagedgen {

// Input line formats. Plain: {"id"?, "prompt" | "messages", sampling fields...}, see
// plain_format.h. OpenAI batch: {"custom_id", "method", "url", "body"}, see
// openai_batch_format.h. Each answers in its own output format (io/output_format.h).
enum class RequestFormat { kPlain, kOpenAiBatch };

// "plain" or "openai", as --format and the manifest spell them.
std::string_view request_format_name(RequestFormat format);

// The format `line` says its input is in: the OpenAI batch format when it is a JSON object
// with a top-level custom_id, method, url or body, else plain; nullopt when it is not a
// JSON object, which says nothing (the format then comes from a later line).
std::optional<RequestFormat> detect_request_format(std::string_view line);

class RequestParser {
 public:
  // `defaults`: the command-line sampling values that each line's fields override.
  // Throws Error when the defaults themselves are invalid.
  RequestParser(RequestFormat format, const SamplingParams& defaults);
  ~RequestParser();
  RequestParser(RequestParser&&) noexcept;
  RequestParser& operator=(RequestParser&&) noexcept;

  // `line` without its line ending; `index` is its 0-based line number. Codes: see
  // request_error in request.h. Throws Stopped when `stop` asks, read every few thousand
  // values of the line and while a response_format's schema compiles.
  RequestItem parse(std::string_view line, uint64_t index, const StopToken& stop = {});

 private:
  struct State;  // the simdjson parser and a padded copy of the line
  std::unique_ptr<State> state_;
};

}  // namespace pagedgen
