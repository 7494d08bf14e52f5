#include "io/chat_message_fields.h"

#include <fmt/format.h>

#include "io/json_line_errors.h"
#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

namespace dom = simdjson::dom;

std::string_view dom_type_name(dom::element_type type) {
  switch (type) {
    case dom::element_type::ARRAY:
      return "a list";
    case dom::element_type::OBJECT:
      return "an object";
    case dom::element_type::STRING:
      return "a string";
    case dom::element_type::BOOL:
      return "a boolean";
    case dom::element_type::NULL_VALUE:
      return "null";
    default:
      return "a number";
  }
}

[[noreturn]] void wrong_dom_type(std::string_view path, std::string_view expected, dom::element element) {
  throw_line_error(request_error::kInvalidType,
                   fmt::format("{} must be {}, got {}", path, expected, dom_type_name(element.type())));
}

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

// A content part: {"type": "text", "text": "..."}; returns its text.
std::string check_content_part(dom::element part, const std::string& path) {
  if (!part.is_object()) wrong_dom_type(path, "an object", part);
  std::string_view type, text;
  const simdjson::error_code type_error = part["type"].get(type);
  if (type_error == simdjson::NO_SUCH_FIELD)
    throw_line_error(request_error::kMissingField, fmt::format("{}.type is missing", path));
  if (type_error) wrong_dom_type(path + ".type", "a string", part["type"].value_unsafe());
  if (type != "text")
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{}.type must be \"text\" (only text parts are supported), got \"{}\"", path, type));
  const simdjson::error_code text_error = part["text"].get(text);
  if (text_error == simdjson::NO_SUCH_FIELD)
    throw_line_error(request_error::kMissingField, fmt::format("{}.text is missing", path));
  if (text_error) wrong_dom_type(path + ".text", "a string", part["text"].value_unsafe());
  return std::string(text);
}

// The content's text, as continue_final_message continues it: a string, or the last text
// part of a list; nullopt for null (beside tool_calls).
std::optional<std::string> check_content(dom::element content, const std::string& path) {
  if (content.is_string()) return std::string(content.get_string().value_unsafe());
  if (content.is_null()) return std::nullopt;
  if (!content.is_array())
    wrong_dom_type(path, "a string, null or a list of {\"type\": \"text\", \"text\": ...} parts", content);
  std::optional<std::string> last;
  std::size_t i = 0;
  for (dom::element part : dom::array(content)) last = check_content_part(part, element_path(path, i++));
  return last;
}

// One message: an object with a non-empty string role and a content (which may be left
// out beside tool_calls). Returns its text (check_content).
std::optional<std::string> check_message(dom::element message, const std::string& path) {
  if (!message.is_object()) wrong_dom_type(path, "an object with \"role\" and \"content\"", message);
  dom::element role, content;
  if (message["role"].get(role))
    throw_line_error(request_error::kMissingField, fmt::format("{}.role is missing", path));
  if (!role.is_string()) wrong_dom_type(path + ".role", "a string", role);
  if (role.get_string().value_unsafe().empty())
    throw_line_error(
        request_error::kInvalidValue,
        fmt::format("{}.role must be a role such as \"system\", \"user\" or \"assistant\", got \"\"", path));
  if (message["content"].get(content)) {
    if (message["tool_calls"].error() == simdjson::NO_SUCH_FIELD)
      throw_line_error(request_error::kMissingField, fmt::format("{}.content is missing", path));
    return std::nullopt;
  }
  return check_content(content, path + ".content");
}

// Checks the messages' JSON text; returns the last message's text.
std::optional<std::string> check_messages(std::string_view text, const std::string& path) {
  dom::parser parser;
  const simdjson::simdjson_result<dom::element> root = parser.parse(text.data(), text.size());
  if (root.error() || !root.value_unsafe().is_array())
    throw_line_error(request_error::kInvalidJson, fmt::format("{} is not a valid JSON list", path));
  const dom::array messages(root.value_unsafe());
  if (messages.size() == 0)
    throw_line_error(request_error::kInvalidValue, fmt::format("{} must hold at least one message", path));
  std::optional<std::string> last;
  std::size_t i = 0;
  for (dom::element message : messages) last = check_message(message, element_path(path, i++));
  return last;
}

// A list passed to the template as given (tools, documents).
std::string read_list_text(od::value value, std::string_view path, std::string_view expected) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::array) wrong_type(path, expected, type);
  return raw_text(value);
}

}  // namespace

ChatTemplateKwargs read_chat_template_kwargs(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, "an object of template variables", type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  ChatTemplateKwargs kwargs;
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    if (field.unescaped_key().get(key) || field.value().get(field_value))
      throw_line_error(request_error::kInvalidJson, "bad object");
    if (is_reserved_chat_variable(key))
      throw_line_error(
          request_error::kInvalidValue,
          fmt::format("{}.{}: \"{}\" is a variable pagedgen sets itself; give it as its own field", path, key, key));
    kwargs.emplace_back(std::string(key), raw_text(field_value));
  }
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
