// The variables transformers' apply_chat_template passes to a template, built as JSON text
// from a request's own JSON, and its continue_final_message cut, done on the rendered text.
#include "tokenizer/chat_template.h"

#include <algorithm>
#include <array>

#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

constexpr std::array<std::string_view, 6> kReservedVariables = {
    "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token",
};

// Python's str.isspace(), which str.strip() uses: Unicode spaces (NBSP, U+3000, ...) too.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip() with no argument. Invalid UTF-8 bytes count as text.
std::string_view python_strip(std::string_view text) {
  size_t begin = text.size();
  size_t end = 0;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    const bool space = step.status == Utf8Status::Valid && is_python_space(step.code_point);
    if (!space) {
      if (begin == text.size()) begin = pos;
      end = pos + step.length;
    }
    pos += step.length;
  }
  return begin < end ? text.substr(begin, end - begin) : std::string_view();
}

void append_member(std::string& out, std::string_view name, std::string_view json_value) {
  out += out.size() == 1 ? "" : ", ";
  append_json_string(out, name);
  out += ": ";
  out += json_value;
}

bool has_kwarg(const ChatTemplateKwargs& kwargs, std::string_view name) {
  return std::ranges::any_of(kwargs, [&](const auto& kwarg) { return kwarg.first == name; });
}

}  // namespace

bool is_reserved_chat_variable(std::string_view name) {
  return std::ranges::find(kReservedVariables, name) != kReservedVariables.end();
}

ChatRequest user_message_request(std::string_view text) {
  ChatRequest request;
  request.messages_json = "[{\"role\": \"user\", \"content\": " + json_quote(text) + "}]";
  return request;
}

ChatTemplate::ChatTemplate(jinja::Template program, std::string bos_text, std::string eos_text,
                           std::chrono::year_month_day date, ChatTemplateKwargs default_kwargs)
    : program_(std::move(program)),
      bos_text_(std::move(bos_text)),
      eos_text_(std::move(eos_text)),
      date_(date),
      default_kwargs_(std::move(default_kwargs)) {}

// As transformers renders: messages, tools and documents (None when not given),
// add_generation_prompt, the special tokens, then the keyword arguments.
std::string ChatTemplate::variables_json(const ChatRequest& request) const {
  std::string out = "{";
  append_member(out, "messages", request.messages_json);
  append_member(out, "tools", request.tools_json.value_or("null"));
  append_member(out, "documents", request.documents_json.value_or("null"));
  append_member(out, "add_generation_prompt", request.add_generation_prompt ? "true" : "false");
  append_member(out, "bos_token", json_quote(bos_text_));
  append_member(out, "eos_token", json_quote(eos_text_));
  for (const auto& [name, value] : default_kwargs_)
    if (!has_kwarg(request.kwargs, name)) append_member(out, name, value);
  for (const auto& [name, value] : request.kwargs) append_member(out, name, value);
  return out + "}";
}

std::string ChatTemplate::render(const ChatRequest& request) const {
  std::string text = program_.render(variables_json(request), date_);
  if (request.continued_text) return cut_after_final_message(text, *request.continued_text);
  return text;
}

std::string cut_after_final_message(std::string_view rendered, std::string_view final_text) {
  const std::string_view stripped = python_strip(final_text);
  const size_t start = stripped.empty() ? rendered.size() : rendered.rfind(stripped);
  if (start == std::string_view::npos)
    fail(
        "continue_final_message: the chat template does not write the final message's text, so there is nothing "
        "to continue");
  if (rendered.substr(start, final_text.size()) == final_text)
    return std::string(rendered.substr(0, start + final_text.size()));
  return std::string(rendered.substr(0, start + stripped.size()));
}

}  // namespace pagedgen
