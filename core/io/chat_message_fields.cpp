#include "io/chat_message_fields.h"

#include <fmt/format.h>

#include "io/json_line_errors.h"
#include "io/json_validation.h"
#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

// OpenAI content: a string, or a list of parts of which only {"type": "text"} is supported.
std::string read_content(od::value value, const std::string& path) {
  const od::json_type type = type_of(value);
  if (type == od::json_type::string) return read_string(value, path);
  if (type != od::json_type::array)
    wrong_type(path, "a string or a list of {\"type\": \"text\", \"text\": ...} parts", type);
  const std::vector<std::string> parts =
      read_list(value, path, "a list", [](od::value part, std::string_view part_path) {
        const od::json_type part_type = type_of(part);
        if (part_type != od::json_type::object) wrong_type(part_path, "an object", part_type);
        od::object object;
        if (part.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
        std::optional<std::string> kind, text;
        for (auto field : object) {
          std::string_view key;
          od::value field_value;
          if (field.unescaped_key().get(key) || field.value().get(field_value))
            throw_line_error(request_error::kInvalidJson, "bad object");
          if (key == "type")
            kind = read_string(field_value, fmt::format("{}.type", part_path));
          else if (key == "text")
            text = read_string(field_value, fmt::format("{}.text", part_path));
        }
        if (!kind) throw_line_error(request_error::kMissingField, fmt::format("{}.type is missing", part_path));
        if (*kind != "text")
          throw_line_error(
              request_error::kInvalidValue,
              fmt::format("{}.type must be \"text\" (only text parts are supported), got \"{}\"", part_path, *kind));
        if (!text) throw_line_error(request_error::kMissingField, fmt::format("{}.text is missing", part_path));
        return *text;
      });
  std::string content;
  for (const std::string& part : parts) content += part;
  return content;
}

ChatMessage read_message(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, "an object with \"role\" and \"content\"", type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  std::optional<std::string> role, content;
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    if (field.unescaped_key().get(key) || field.value().get(field_value))
      throw_line_error(request_error::kInvalidJson, "bad object");
    // Other keys ("name", ...) are ignored, as for top-level keys.
    if (key == "role")
      role = read_string(field_value, fmt::format("{}.role", path));
    else if (key == "content")
      content = read_content(field_value, fmt::format("{}.content", path));
  }
  if (!role) throw_line_error(request_error::kMissingField, fmt::format("{}.role is missing", path));
  if (role->empty())
    throw_line_error(
        request_error::kInvalidValue,
        fmt::format("{}.role must be a role such as \"system\", \"user\" or \"assistant\", got \"\"", path));
  if (!content) throw_line_error(request_error::kMissingField, fmt::format("{}.content is missing", path));
  return ChatMessage{std::move(*role), std::move(*content)};
}

}  // namespace

std::vector<ChatMessage> read_messages(od::value value, std::string_view path) {
  std::vector<ChatMessage> messages = read_list(value, path, "a list of {\"role\", \"content\"} objects", read_message);
  if (messages.empty())
    throw_line_error(request_error::kInvalidValue, fmt::format("{} must hold at least one message", path));
  return messages;
}

}  // namespace pagedgen::json_fields
