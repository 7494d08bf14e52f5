#include "io/plain_format.h"

#include <fmt/format.h>

#include "io/json_fields.h"
#include "util/error.h"

namespace pagedgen {

namespace {

namespace od = simdjson::ondemand;
using json_fields::LineError;
using json_fields::throw_line_error;

struct RequestIdentity {
  std::optional<std::string> id_json;
  std::string seed_key;
};

// Pass 1: checks the whole line (syntax, duplicate keys) and reads the id, so that an
// error found later can still name the id. A bad id is reported after the line is known
// to be valid JSON.
RequestIdentity read_identity(od::document& document, const char* line_begin, uint64_t index) {
  const auto check = [&](simdjson::error_code error) {
    if (error) json_fields::throw_json_error(error, document, line_begin);
  };
  od::json_type root_type{};
  check(document.type().get(root_type));
  if (root_type != od::json_type::object)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("a request line must be a JSON object {{\"prompt\": ...}} or "
                                 "{{\"messages\": ...}}, got {}",
                                 json_fields::type_name(root_type)));
  od::object object;
  check(document.get_object().get(object));
  RequestIdentity identity{std::nullopt, fmt::format("#{}", index)};
  std::optional<LineError> id_error;
  std::vector<std::string> keys;
  for (auto field : object) {
    std::string_view key;
    check(field.unescaped_key().get(key));
    for (const std::string& seen : keys)
      if (seen == key)
        throw_line_error(request_error::kDuplicateField, fmt::format("field \"{}\" appears twice", key));
    keys.emplace_back(key);
    od::value value;
    check(field.value().get(value));
    if (key == "id") {
      const od::json_type type = json_fields::type_of(value);
      if (type == od::json_type::string || type == od::json_type::number) {
        identity.id_json = std::string(json_fields::token_text(value));
        if (type == od::json_type::string) {
          std::string_view decoded;
          check(value.get_string().get(decoded));
          identity.seed_key = std::string(decoded);
        } else {
          double number = 0;
          check(value.get_double().get(number));
          identity.seed_key = *identity.id_json;
        }
        continue;
      }
      if (type != od::json_type::null)
        id_error = LineError{request_error::kInvalidType,
                             fmt::format("id must be a string, a number or null, got {}",
                                         json_fields::type_name(type))};
    }
    json_fields::validate_value(value, std::string(key), document, line_begin);
  }
  const char* trailing = nullptr;
  if (document.current_location().get(trailing) == simdjson::SUCCESS)
    throw_line_error(request_error::kInvalidJson,
                     fmt::format("the line is not valid JSON: content after the object (near byte {})",
                                 trailing - line_begin));
  if (id_error) throw *id_error;
  return identity;
}

}  // namespace

RequestItem parse_plain_request(od::document& document, const char* line_begin, uint64_t index,
                                const SamplingParams& defaults) {
  RequestIdentity identity;
  try {
    identity = read_identity(document, line_begin, index);
  } catch (const LineError& error) {
    return RequestError{index, std::nullopt, std::string(error.code), error.message};
  }
  try {
    // Pass 2: the line is valid JSON; read the fields it gives, in line order.
    document.rewind();
    od::object object;
    PG_CHECK(document.get_object().get(object) == simdjson::SUCCESS, "object of a validated line");
    std::optional<std::string> prompt;
    std::optional<std::vector<ChatMessage>> messages;
    SamplingParams sampling = defaults;
    for (auto field : object) {
      std::string_view key;
      od::value value;
      PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(value) == simdjson::SUCCESS,
               "field of a validated line");
      if (key == "prompt") {
        if (json_fields::type_of(value) == od::json_type::null) continue;
        prompt = json_fields::read_string(value, key);
        if (prompt->empty())
          throw_line_error(request_error::kInvalidValue, "prompt must be a non-empty string, got \"\"");
      } else if (key == "messages") {
        if (json_fields::type_of(value) == od::json_type::null) continue;
        messages = json_fields::read_messages(value, key);
      } else {
        json_fields::read_sampling_field(key, value, sampling);  // unknown keys are ignored
      }
    }
    if (prompt && messages)
      throw_line_error(request_error::kConflictingFields,
                       "the line gives both prompt and messages; give exactly one");
    if (!prompt && !messages)
      throw_line_error(request_error::kMissingField,
                       "the line needs \"prompt\" (text) or \"messages\" (a chat conversation)");
    try {
      validate(sampling);
    } catch (const Error& error) {
      throw_line_error(request_error::kInvalidValue, error.what());
    }
    Request request;
    request.index = index;
    request.id_json = std::move(identity.id_json);
    request.seed_key = std::move(identity.seed_key);
    if (prompt) request.input = std::move(*prompt);
    else request.input = std::move(*messages);
    request.sampling = std::move(sampling);
    return request;
  } catch (const LineError& error) {
    return RequestError{index, std::move(identity.id_json), std::string(error.code), error.message};
  }
}

}  // namespace pagedgen
