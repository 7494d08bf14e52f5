// The chat fields of a request line, read into a ChatRequest for the model's template:
// "messages" (checked, then passed through as written: content as a string, null or a list
// of text parts, tool_calls, tool_call_id, name, reasoning_content, ...), "tools",
// "documents", "chat_template_kwargs", "add_generation_prompt" and "continue_final_message".
// Internal to core/io.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/chat_template.h"

namespace pagedgen::json_fields {

// chat_template_kwargs: an object whose members become template variables, none of them one
// pagedgen sets itself. Throws LineError.
ChatTemplateKwargs read_chat_template_kwargs(simdjson::ondemand::value value, std::string_view path);

class ChatFields {
 public:
  // `prefix` goes before each key in error messages ("" or "body.").
  explicit ChatFields(std::string_view prefix) : prefix_(prefix) {}

  // Reads the field when `key` is one of the chat fields (null is the same as absent);
  // false when it is none of them. Throws LineError for a bad value.
  bool read(std::string_view key, simdjson::ondemand::value value);

  bool has_messages() const { return request_.messages_json.size() > 0; }

  // The line's conversation, once every field is read. Throws LineError for a combination
  // the template cannot take (continue_final_message with add_generation_prompt: true, or
  // with a final message that has no text).
  ChatRequest take();

  // Throws LineError when a chat field other than messages was given to a prompt line.
  void check_prompt_line() const;

 private:
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }

  std::string prefix_;
  ChatRequest request_;
  std::optional<bool> add_generation_prompt_;
  bool continue_final_message_ = false;
  std::optional<std::string> final_text_;             // the last message's text, as continue_final_message needs it
  std::optional<std::string> first_chat_only_field_;  // for check_prompt_line()
};

}  // namespace pagedgen::json_fields
