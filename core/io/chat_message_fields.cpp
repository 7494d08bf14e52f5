#include "io/chat_message_fields.h"

#include <fmt/format.h>

#include "io/json_line_errors.h"
#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

// The JSON text of a value as written (objects and lists whole).
std::string raw_text(od::value value) {
  std::string_view text;
  const od::json_type type = type_of(value);
  bool ok = true;
  if (type == od::json_type::array) {
    od::array array;
    ok = value.get_array().get(array) == simdjson::SUCCESS && array.raw_json().get(text) == simdjson::SUCCESS;
  } else if (type == od::json_type::object) {
    od::object object;
    ok = value.get_object().get(object) == simdjson::SUCCESS && object.raw_json().get(text) == simdjson::SUCCESS;
  } else {
    text = token_text(value);
  }
  if (!ok) throw_line_error(request_error::kInvalidJson, "bad value");
  return std::string(text);
}

// The fields of an object, each as (key, value); `path` names it in errors.
template <typename Visit>
void for_each_field(od::value value, std::string_view path, std::string_view expected, Visit visit) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, expected, type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    if (field.unescaped_key().get(key) || field.value().get(field_value))
      throw_line_error(request_error::kInvalidJson, "bad object");
    visit(key, field_value);
  }
}

// A content part: {"type": "text", "text": "..."}; returns its text.
std::string check_content_part(od::value part, std::string_view part_path) {
  const std::string path(part_path);
  std::optional<std::string> type, text;
  for_each_field(part, path, "an object", [&](std::string_view key, od::value value) {
    if (key == "type") type = read_string(value, path + ".type");
    if (key == "text") text = read_string(value, path + ".text");
  });
  if (!type) throw_line_error(request_error::kMissingField, fmt::format("{}.type is missing", path));
  if (*type != "text")
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{}.type must be \"text\" (only text parts are supported), got \"{}\"", path, *type));
  if (!text) throw_line_error(request_error::kMissingField, fmt::format("{}.text is missing", path));
  return *text;
}

// The content's text, as continue_final_message continues it: a string, or the last text
// part of a list; nullopt for null (beside tool_calls).
std::optional<std::string> check_content(od::value content, const std::string& path) {
  const od::json_type type = type_of(content);
  if (type == od::json_type::string) return read_string(content, path);
  if (type == od::json_type::null) return std::nullopt;
  if (type != od::json_type::array)
    wrong_type(path, "a string, null or a list of {\"type\": \"text\", \"text\": ...} parts", type);
  std::vector<std::string> texts = read_list(content, path, "a list", check_content_part);
  if (texts.empty()) return std::nullopt;
  return std::move(texts.back());
}

// One message: an object with a non-empty string role and a content (which may be left
// out beside tool_calls). Returns its text (check_content). Other fields are the
// template's: they are not read here, so numbers of any size pass through.
std::optional<std::string> check_message(od::value message, std::string_view message_path) {
  const std::string path(message_path);
  std::optional<std::string> role;
  std::optional<std::optional<std::string>> content;
  bool has_tool_calls = false;
  for_each_field(message, path, "an object with \"role\" and \"content\"", [&](std::string_view key, od::value value) {
    if (key == "role") role = read_string(value, path + ".role");
    if (key == "content") content = check_content(value, path + ".content");
    has_tool_calls |= key == "tool_calls";
  });
  if (!role) throw_line_error(request_error::kMissingField, fmt::format("{}.role is missing", path));
  if (role->empty())
    throw_line_error(
        request_error::kInvalidValue,
        fmt::format("{}.role must be a role such as \"system\", \"user\" or \"assistant\", got \"\"", path));
  if (!content && !has_tool_calls)
    throw_line_error(request_error::kMissingField, fmt::format("{}.content is missing", path));
  return content.value_or(std::nullopt);
}

// Checks the messages' JSON text (a copy of the line's, read again); returns the last
// message's text.
std::optional<std::string> check_messages(std::string_view text, const std::string& path) {
  od::parser parser;
  const simdjson::padded_string padded(text);
  od::document document;
  od::value messages;
  if (parser.iterate(padded).get(document) || document.get_value().get(messages))
    throw_line_error(request_error::kInvalidJson, fmt::format("{} is not valid JSON", path));
  std::vector<std::optional<std::string>> texts = read_list(messages, path, "a list", check_message);
  if (texts.empty())
    throw_line_error(request_error::kInvalidValue, fmt::format("{} must hold at least one message", path));
  return std::move(texts.back());
}

// A list passed to the template as given (tools, documents).
std::string read_list_text(od::value value, std::string_view path, std::string_view expected) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::array) wrong_type(path, expected, type);
  return raw_text(value);
}

}  // namespace

ChatTemplateKwargs read_chat_template_kwargs(od::value value, std::string_view path) {
  ChatTemplateKwargs kwargs;
  for_each_field(value, path, "an object of template variables", [&](std::string_view key, od::value field_value) {
    if (is_reserved_chat_variable(key))
      throw_line_error(
          request_error::kInvalidValue,
          fmt::format("{}.{}: \"{}\" is a variable pagedgen sets itself; give it as its own field", path, key, key));
    kwargs.emplace_back(std::string(key), raw_text(field_value));
  });
  return kwargs;
}

bool ChatFields::read(std::string_view key, od::value value) {
  const bool is_null = type_of(value) == od::json_type::null;
  if (key == "messages") {
    if (is_null) return true;
    request_.messages_json = read_list_text(value, path(key), "a list of {\"role\", \"content\"} objects");
    final_text_ = check_messages(request_.messages_json, path(key));
    return true;
  }
  if (key != "tools" && key != "documents" && key != "chat_template_kwargs" && key != "add_generation_prompt" &&
      key != "continue_final_message")
    return false;
  if (is_null) return true;
  // add_generation_prompt changes nothing without a template; the others would be lost.
  if (!first_chat_only_field_ && key != "add_generation_prompt") first_chat_only_field_ = std::string(key);
  if (key == "tools")
    request_.tools_json = read_list_text(value, path(key), "a list of tools");
  else if (key == "documents")
    request_.documents_json = read_list_text(value, path(key), "a list of documents");
  else if (key == "chat_template_kwargs")
    request_.kwargs = read_chat_template_kwargs(value, path(key));
  else if (key == "add_generation_prompt")
    add_generation_prompt_ = read_bool(value, path(key));
  else
    continue_final_message_ = read_bool(value, path(key));
  return true;
}

// A conversation to continue ends its prompt inside the final message, so no new turn
// starts: add_generation_prompt defaults to false then, and true is refused (as vLLM does).
ChatRequest ChatFields::take() {
  if (continue_final_message_) {
    if (add_generation_prompt_.value_or(false))
      throw_line_error(request_error::kConflictingFields,
                       fmt::format("{} and {}: true ask for two different ends of the prompt; give one",
                                   path("continue_final_message"), path("add_generation_prompt")));
    if (!final_text_)
      throw_line_error(request_error::kInvalidValue,
                       fmt::format("{} needs a final message with text to continue", path("continue_final_message")));
    request_.continued_text = std::move(final_text_);
  }
  request_.add_generation_prompt = add_generation_prompt_.value_or(!continue_final_message_);
  return std::move(request_);
}

void ChatFields::check_prompt_line() const {
  if (first_chat_only_field_)
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("{} is for a chat template and applies to messages; this line gives a prompt",
                                 path(*first_chat_only_field_)));
}

}  // namespace pagedgen::json_fields
