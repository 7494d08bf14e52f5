// Chat templates: a model's Jinja template (core/jinja) rendering a request's conversation into
// the prompt text it was trained on, with the variables transformers passes (messages, tools,
// documents, add_generation_prompt, bos_token, eos_token, chat_template_kwargs) and its
// continue_final_message, so pagedgen's prompt is the one vLLM or transformers would render.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/template.h"

namespace pagedgen {

// chat_template_kwargs: extra template variables, each a name and its JSON value's text, in
// the order given.
using ChatTemplateKwargs = std::vector<std::pair<std::string, std::string>>;

// The template variables pagedgen sets itself; chat_template_kwargs may not name them.
bool is_reserved_chat_variable(std::string_view name);

// What a chat request line gives the template. The JSON texts are the line's own, passed
// through as written (every field of every message, key order kept), so a template sees
// what it would see in transformers.
struct ChatRequest {
  std::string messages_json;                  // the "messages" array
  std::optional<std::string> tools_json;      // "tools"; absent: the template sees none
  std::optional<std::string> documents_json;  // "documents"; absent: none
  ChatTemplateKwargs kwargs;                  // the line's chat_template_kwargs
  bool add_generation_prompt = true;
  // continue_final_message: the final message's text (its content, or the last text part of
  // it). The prompt then ends right after that text, as transformers cuts it: the model
  // continues the final message instead of starting a new turn.
  std::optional<std::string> continued_text;
};

// A conversation of one user message with this text, to which the assistant answers.
ChatRequest user_message_request(std::string_view text);

class ChatTemplate {
 public:
  // `bos_text`/`eos_text`: the model's special-token texts (bos_token, eos_token); `date`:
  // what strftime_now formats; `default_kwargs`: --chat-template-kwargs, which a line's own
  // chat_template_kwargs override name by name.
  ChatTemplate(jinja::Template program, std::string bos_text, std::string eos_text, std::chrono::year_month_day date,
               ChatTemplateKwargs default_kwargs = {});

  // The prompt text, with special-token text, to tokenize with parse_special = true and
  // without adding BOS. Throws jinja::TemplateError when the template fails (raise_exception,
  // a budget spent, ...) and Error when the final message to continue is not in its text.
  std::string render(const ChatRequest& request) const;

  // The variables object render() passes to the template, as JSON text.
  std::string variables_json(const ChatRequest& request) const;

 private:
  jinja::Template program_;
  std::string bos_text_;
  std::string eos_text_;
  std::chrono::year_month_day date_;
  ChatTemplateKwargs default_kwargs_;
};

// transformers' continue_final_message: `rendered` cut right after the last occurrence of
// the final message's text (trimmed as Python's str.strip() does; the untrimmed text when the
// template kept it whole). Throws Error when the template did not write that text.
std::string cut_after_final_message(std::string_view rendered, std::string_view final_text);

}  // namespace pagedgen
