// RequestParser: one input line -> a Request or a RequestError, for a given input format.
// Never throws for a bad line: every problem of the line becomes its RequestError.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "io/request.h"
#include "sample/sampling_params.h"

namespace pagedgen {

// Input line formats. Plain: {"id"?, "prompt" | "messages", sampling fields...}, see
// plain_format.h. (The OpenAI batch format is the next one to add here.)
enum class RequestFormat { kPlain };

class RequestParser {
 public:
  // `defaults`: the command-line sampling values that each line's fields override.
  // Throws Error when the defaults themselves are invalid.
  RequestParser(RequestFormat format, const SamplingParams& defaults);
  ~RequestParser();
  RequestParser(RequestParser&&) noexcept;
  RequestParser& operator=(RequestParser&&) noexcept;

  // `line` without its line ending; `index` is its 0-based line number. Codes: see
  // request_error in request.h.
  RequestItem parse(std::string_view line, uint64_t index);

 private:
  struct State;  // the simdjson parser and a padded copy of the line
  std::unique_ptr<State> state_;
};

}  // namespace pagedgen
