#include "io/plain_format.h"

#include <fmt/format.h>

#include "io/chat_message_fields.h"
#include "io/guided_fields.h"
#include "io/json_values.h"
#include "io/line_identity.h"
#include "io/prompt_field.h"
#include "io/refused_fields.h"
#include "io/sampling_fields.h"
#include "util/error.h"

namespace pagedgen {

namespace {

namespace od = simdjson::ondemand;
using json_fields::throw_line_error;

// "logprobs": k, the number of alternatives per generated token (true is not a count).
int32_t read_logprobs_count(od::value value) {
  const od::json_type type = json_fields::type_of(value);
  if (type != od::json_type::number)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("logprobs must be an integer in [0, {}] (the number of alternatives reported per "
                                 "token), got {}",
                                 kMaxTopLogprobs, json_fields::type_name(type)));
  return json_fields::read_int32(value, "logprobs");
}

// The keys the plain format reads its own way: logprobs as a count, and the OpenAI body
// fields it refuses, pointing to its own. True when `key` was one of them.
bool read_plain_only_field(std::string_view key, od::value value, SamplingParams& sampling) {
  if (key == "logprobs") {
    if (json_fields::type_of(value) != od::json_type::null) sampling.logprobs = read_logprobs_count(value);
    return true;
  }
  if (key == "echo") {
    if (json_fields::type_of(value) != od::json_type::null && json_fields::read_bool(value, key))
      throw_line_error(request_error::kUnsupportedField,
                       "echo is an OpenAI completions field; plain lines give prompt_logprobs: k for the prompt's "
                       "log probabilities (the text never repeats the prompt)");
    return true;
  }
  if (key == "top_logprobs" || key == "max_completion_tokens")
    throw_line_error(request_error::kUnsupportedField,
                     fmt::format("{} is an OpenAI body field; the plain format gives {}", key,
                                 key == "top_logprobs" ? "logprobs: k" : "max_tokens"));
  return false;
}

}  // namespace

RequestItem parse_plain_request(od::document& document, const char* line_begin, uint64_t index,
                                const SamplingParams& defaults, json_fields::ResponseFormatReader& response_formats,
                                StopPoll& poll) {
  const auto read_fields = [&](const json_fields::LineIdentity& identity, od::object& object) -> Request {
    std::optional<std::variant<std::string, std::vector<TokenId>>> prompt;  // text or token ids
    json_fields::ChatFields chat("");
    SamplingParams sampling = defaults;
    json_fields::LineConstraint constraint;
    bool has_batch_keys = false;
    for (auto field : object) {
      poll.tick();
      std::string_view key;
      od::value value;
      PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(value) == simdjson::SUCCESS,
               "field of a validated line");
      if (key == "prompt") {
        if (json_fields::type_of(value) == od::json_type::null) continue;
        prompt = json_fields::read_prompt(value, key);
      } else if (chat.read(key, value)) {
        continue;
      } else if (json_fields::read_constraint_field(key, value, key, response_formats, constraint,
                                                    sampling.response_format, poll.token())) {
        continue;
      } else if (read_plain_only_field(key, value, sampling)) {
        continue;
      } else if (json_fields::check_refused_field(key, value, key)) {
        continue;
      } else if (!json_fields::read_sampling_field(key, value, sampling)) {
        has_batch_keys |= key == "custom_id" || key == "body";  // other unknown keys are ignored
      }
    }
    const bool messages = chat.has_messages();
    if (prompt && messages)
      throw_line_error(request_error::kConflictingFields, "the line gives both prompt and messages; give exactly one");
    if (!prompt && !messages && has_batch_keys)
      throw_line_error(request_error::kWrongFormat,
                       "the line is in the OpenAI batch format (custom_id, body), but this input is in the plain "
                       "format (the line format: detected from its first line that is a JSON object, or set for the "
                       "run)");
    if (!prompt && !messages)
      throw_line_error(request_error::kMissingField,
                       "the line needs \"prompt\" (text) or \"messages\" (a chat conversation)");
    if (prompt) {
      chat.check_prompt_line();
      return std::visit(
          [&](auto& input) {
            return json_fields::make_request(index, identity, std::move(input), std::move(sampling));
          },
          *prompt);
    }
    return json_fields::make_request(index, identity, chat.take(), std::move(sampling));
  };
  return json_fields::parse_identified_line(document, line_begin, index, {"id", true},
                                            R"({"prompt": ...} or {"messages": ...})", read_fields, poll);
}

}  // namespace pagedgen
