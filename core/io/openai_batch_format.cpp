#include "io/openai_batch_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "io/json_fields.h"
#include "io/line_identity.h"
#include "util/error.h"

namespace pagedgen {

namespace {

namespace od = simdjson::ondemand;
using json_fields::throw_line_error;

// Body fields that change what a response means and that pagedgen does not implement.
constexpr std::array<std::string_view, 11> kUnsupportedBodyFields = {
    "stream", "logprobs", "top_logprobs", "echo", "suffix", "best_of", "presence_penalty", "frequency_penalty",
    "logit_bias", "tools", "functions"};

// A value that asks for nothing: null, false, 0, "", [], {} (and 1 for best_of).
bool is_neutral(od::value value, bool one_is_neutral) {
  switch (json_fields::type_of(value)) {
    case od::json_type::null: return true;
    case od::json_type::boolean: return !json_fields::read_bool(value, "");
    case od::json_type::number: {
      const double number = json_fields::read_number(value, "");
      return number == 0 || (one_is_neutral && number == 1);
    }
    case od::json_type::string: return json_fields::read_string(value, "").empty();
    case od::json_type::array: {
      std::size_t count = 0;
      return value.count_elements().get(count) == simdjson::SUCCESS && count == 0;
    }
    case od::json_type::object: {
      std::size_t count = 0;
      return value.count_fields().get(count) == simdjson::SUCCESS && count == 0;
    }
  }
  return false;
}

struct Body {
  std::optional<std::string> model;
  std::optional<std::string> prompt;
  std::optional<std::vector<ChatMessage>> messages;
  SamplingParams sampling;
  bool has_max_tokens = false;
  bool has_max_completion_tokens = false;
};

Body read_body(od::value value, const SamplingParams& defaults, json_fields::ResponseFormatReader& response_formats) {
  const od::json_type type = json_fields::type_of(value);
  if (type != od::json_type::object)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("body must be an object, got {}", json_fields::type_name(type)));
  od::object object;
  PG_CHECK(value.get_object().get(object) == simdjson::SUCCESS, "body of a validated line");
  Body body;
  body.sampling = defaults;
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(field_value) == simdjson::SUCCESS,
             "body field of a validated line");
    const std::string path = fmt::format("body.{}", key);
    const bool is_null = json_fields::type_of(field_value) == od::json_type::null;
    if (key == "model") {
      if (!is_null) body.model = json_fields::read_string(field_value, path);
    } else if (key == "prompt") {
      if (is_null) continue;
      if (json_fields::type_of(field_value) == od::json_type::array)
        throw_line_error(request_error::kInvalidType,
                         "body.prompt must be a string, got a list (one prompt per line: lists of prompts or of "
                         "token ids are not supported)");
      body.prompt = json_fields::read_string(field_value, path);
      if (body.prompt->empty())
        throw_line_error(request_error::kInvalidValue, "body.prompt must be a non-empty string, got \"\"");
    } else if (key == "messages") {
      if (!is_null) body.messages = json_fields::read_messages(field_value, path);
    } else if (key == "response_format") {
      if (!is_null) body.sampling.response_format = response_formats.read(field_value, path);
    } else if (key == "max_completion_tokens") {
      json_fields::read_sampling_field("max_tokens", field_value, body.sampling);
      body.has_max_completion_tokens = !is_null;
    } else if (std::find(kUnsupportedBodyFields.begin(), kUnsupportedBodyFields.end(), key) !=
               kUnsupportedBodyFields.end()) {
      if (!is_neutral(field_value, key == "best_of"))
        throw_line_error(request_error::kUnsupportedField,
                         fmt::format("{} is not supported by pagedgen; remove it or give its default", path));
    } else {
      body.has_max_tokens |= key == "max_tokens" && !is_null;
      json_fields::read_sampling_field(key, field_value, body.sampling);  // unknown keys are ignored
    }
  }
  return body;
}

}  // namespace

RequestItem parse_openai_batch_request(od::document& document, const char* line_begin, uint64_t index,
                                       const SamplingParams& defaults,
                                       json_fields::ResponseFormatReader& response_formats) {
  const auto read_fields = [&](const json_fields::LineIdentity& identity, od::object& object) {
    std::optional<std::string> method, url;
    std::optional<Body> body;
    bool has_plain_keys = false;
    for (auto field : object) {
      std::string_view key;
      od::value value;
      PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(value) == simdjson::SUCCESS,
               "field of a validated line");
      if (key == "method") method = json_fields::read_string(value, key);
      else if (key == "url") url = json_fields::read_string(value, key);
      else if (key == "body") body = read_body(value, defaults, response_formats);
      else has_plain_keys |= key == "prompt" || key == "messages";  // other keys are ignored
    }
    if (has_plain_keys && !identity.id_json && !method && !url && !body)
      throw_line_error(request_error::kWrongFormat,
                       "the line is in the plain format (prompt or messages at the top level), but this input is in "
                       "the OpenAI batch format (detected from its first non-blank line, or set with --format)");
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
    if (chat && body->prompt)
      throw_line_error(request_error::kConflictingFields,
                       fmt::format("body.prompt is for {}; a {} body gives messages", kCompletionsUrl, *url));
    if (!chat && body->messages)
      throw_line_error(request_error::kConflictingFields,
                       fmt::format("body.messages is for {}; a {} body gives prompt", kChatCompletionsUrl, *url));
    if (chat && !body->messages)
      throw_line_error(request_error::kMissingField, fmt::format("body.messages is missing: {} needs a conversation", *url));
    if (!chat && !body->prompt)
      throw_line_error(request_error::kMissingField, fmt::format("body.prompt is missing: {} needs a prompt", *url));
    if (body->has_max_tokens && body->has_max_completion_tokens)
      throw_line_error(request_error::kConflictingFields,
                       "the body gives both max_tokens and max_completion_tokens; give one");
    Request request = chat ? json_fields::make_request(index, identity, std::move(*body->messages),
                                                       std::move(body->sampling))
                           : json_fields::make_request(index, identity, std::move(*body->prompt),
                                                       std::move(body->sampling));
    request.model = std::move(body->model);
    return request;
  };
  return json_fields::parse_identified_line(document, line_begin, index, {"custom_id", false},
                                            R"({"custom_id", "method", "url", "body"})", read_fields);
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
