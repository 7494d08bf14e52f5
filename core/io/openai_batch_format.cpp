#include "io/openai_batch_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

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

struct Body {
  std::optional<std::string> model;
  std::optional<std::variant<std::string, std::vector<TokenId>>> prompt;  // text or token ids
  json_fields::ChatFields chat{"body."};
  SamplingParams sampling;
  bool has_max_tokens = false;
  bool has_max_completion_tokens = false;
  // logprobs is true/false in chat bodies and a count in completions bodies: kept as
  // given until the url says which.
  std::optional<bool> logprobs_flag;
  std::optional<int32_t> logprobs_count;
  std::optional<int32_t> top_logprobs;
};

// Sets sampling.logprobs from the body's logprobs and top_logprobs, for the url's kind.
void resolve_logprobs(Body& body, bool chat, std::string_view url) {
  if (chat) {
    if (body.logprobs_count)
      throw_line_error(request_error::kInvalidType,
                       fmt::format("body.logprobs must be true or false for {} (give top_logprobs: k for the k most "
                                   "likely alternatives), got {}",
                                   url, *body.logprobs_count));
    const bool on = body.logprobs_flag.value_or(false);
    if (!on && body.top_logprobs.value_or(0) != 0)
      throw_line_error(request_error::kInvalidValue, "body.top_logprobs needs body.logprobs: true");
    if (on) body.sampling.logprobs = body.top_logprobs.value_or(0);
    return;
  }
  if (body.logprobs_flag)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("body.logprobs must be an integer in [0, {}] for {} (the number of alternatives per "
                                 "token), got {}",
                                 kMaxTopLogprobs, url, *body.logprobs_flag));
  if (body.top_logprobs)
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("body.top_logprobs is for {}; a {} body gives logprobs: k", kChatCompletionsUrl, url));
  if (body.logprobs_count) body.sampling.logprobs = *body.logprobs_count;
}

Body read_body(od::value value, const SamplingParams& defaults, json_fields::ResponseFormatReader& response_formats,
               StopPoll& poll) {
  const od::json_type type = json_fields::type_of(value);
  if (type != od::json_type::object)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("body must be an object, got {}", json_fields::type_name(type)));
  od::object object;
  PG_CHECK(value.get_object().get(object) == simdjson::SUCCESS, "body of a validated line");
  Body body;
  body.sampling = defaults;
  json_fields::LineConstraint constraint;
  for (auto field : object) {
    poll.tick();
    std::string_view key;
    od::value field_value;
    PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(field_value) == simdjson::SUCCESS,
             "body field of a validated line");
    const std::string path = fmt::format("body.{}", key);
    const bool is_null = json_fields::type_of(field_value) == od::json_type::null;
    if (key == "model") {
      if (!is_null) body.model = json_fields::read_string(field_value, path);
    } else if (key == "prompt") {
      if (!is_null) body.prompt = json_fields::read_prompt(field_value, path);
    } else if (body.chat.read(key, field_value)) {
      continue;
    } else if (json_fields::read_constraint_field(key, field_value, path, response_formats, constraint,
                                                  body.sampling.response_format, poll.token())) {
      continue;
    } else if (key == "max_completion_tokens") {
      json_fields::read_sampling_field("max_tokens", field_value, body.sampling);
      body.has_max_completion_tokens = !is_null;
    } else if (key == "logprobs") {
      if (is_null) continue;
      if (json_fields::type_of(field_value) == od::json_type::boolean)
        body.logprobs_flag = json_fields::read_bool(field_value, path);
      else
        body.logprobs_count = json_fields::read_int32(field_value, path);
    } else if (key == "echo") {
      if (!is_null) body.sampling.echo = json_fields::read_bool(field_value, path);
    } else if (key == "top_logprobs") {
      if (!is_null) body.top_logprobs = json_fields::read_int32(field_value, path);
    } else if (json_fields::check_refused_field(key, field_value, path)) {
      continue;
    } else {
      body.has_max_tokens |= key == "max_tokens" && !is_null;
      json_fields::read_sampling_field(key, field_value, body.sampling);  // unknown keys are ignored
    }
  }
  return body;
}

// The body's input matches the url: messages for chat completions, prompt for completions.
void check_body_input(const Body& body, bool chat, std::string_view url) {
  if (chat && body.prompt)
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("body.prompt is for {}; a {} body gives messages", kCompletionsUrl, url));
  if (!chat && body.chat.has_messages())
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("body.messages is for {}; a {} body gives prompt", kChatCompletionsUrl, url));
  if (chat && !body.chat.has_messages())
    throw_line_error(request_error::kMissingField,
                     fmt::format("body.messages is missing: {} needs a conversation", url));
  if (!chat && !body.prompt)
    throw_line_error(request_error::kMissingField, fmt::format("body.prompt is missing: {} needs a prompt", url));
  if (!chat) body.chat.check_prompt_line();
  if (chat && body.sampling.echo)
    throw_line_error(request_error::kUnsupportedField,
                     fmt::format("body.echo is not supported for {} (it applies to {}); remove it or give false", url,
                                 kCompletionsUrl));
}

}  // namespace

RequestItem parse_openai_batch_request(od::document& document, const char* line_begin, uint64_t index,
                                       const SamplingParams& defaults,
                                       json_fields::ResponseFormatReader& response_formats, StopPoll& poll) {
  const auto read_fields = [&](const json_fields::LineIdentity& identity, od::object& object) {
    std::optional<std::string> method, url;
    std::optional<Body> body;
    bool has_plain_keys = false;
    for (auto field : object) {
      poll.tick();
      std::string_view key;
      od::value value;
      PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(value) == simdjson::SUCCESS,
               "field of a validated line");
      if (key == "method")
        method = json_fields::read_string(value, key);
      else if (key == "url")
        url = json_fields::read_string(value, key);
      else if (key == "body")
        body = read_body(value, defaults, response_formats, poll);
      else
        has_plain_keys |= key == "prompt" || key == "messages";  // other keys are ignored
    }
    if (has_plain_keys && !identity.id_json && !method && !url && !body)
      throw_line_error(request_error::kWrongFormat,
                       "the line is in the plain format (prompt or messages at the top level), but this input is in "
                       "the OpenAI batch format (the line format: detected from its first line that is a JSON object, "
                       "or set for the run)");
    if (!identity.id_json)
      throw_line_error(request_error::kMissingField, "custom_id is missing: every line needs a string custom_id");
    if (!method) throw_line_error(request_error::kMissingField, "method is missing: give \"POST\"");
    if (*method != "POST")
      throw_line_error(request_error::kInvalidValue, fmt::format("method must be \"POST\", got \"{}\"", *method));
    if (!url)
      throw_line_error(request_error::kMissingField,
                       fmt::format("url is missing: give \"{}\" or \"{}\"", kChatCompletionsUrl, kCompletionsUrl));
    const bool chat = *url == kChatCompletionsUrl;
    if (!chat && *url != kCompletionsUrl)
      throw_line_error(request_error::kInvalidValue, fmt::format("url must be \"{}\" or \"{}\", got \"{}\"",
                                                                 kChatCompletionsUrl, kCompletionsUrl, *url));
    if (!body) throw_line_error(request_error::kMissingField, "body is missing: give the request's parameters");
    check_body_input(*body, chat, *url);
    resolve_logprobs(*body, chat, *url);
    if (body->has_max_tokens && body->has_max_completion_tokens)
      throw_line_error(request_error::kConflictingFields,
                       "the body gives both max_tokens and max_completion_tokens; give one");
    const auto request_of = [&](auto&& input) {
      return json_fields::make_request(index, identity, std::move(input), std::move(body->sampling));
    };
    Request request = chat ? request_of(body->chat.take()) : std::visit(request_of, *body->prompt);
    request.model = std::move(body->model);
    return request;
  };
  return json_fields::parse_identified_line(document, line_begin, index, {"custom_id", false},
                                            R"({"custom_id", "method", "url", "body"})", read_fields, poll);
}

bool looks_like_openai_batch_line(od::document& document) {
  od::object object;
  if (document.get_object().get(object) != simdjson::SUCCESS) return false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "custom_id" || key == "method" || key == "url" || key == "body") return true;
  }
  return false;
}

}  // namespace pagedgen
