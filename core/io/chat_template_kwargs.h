// --chat-template-kwargs: a JSON object of extra chat-template variables for every line (a
// line's own chat_template_kwargs override it name by name).
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/chat_template.h"

namespace pagedgen {

// Throws Error saying what is wrong: not JSON, not an object, or a variable pagedgen sets
// itself (messages, tools, ...).
ChatTemplateKwargs parse_chat_template_kwargs(std::string_view text);

// The kwargs as one compact JSON object, names in order: {"enable_thinking": false}.
std::string format_chat_template_kwargs(const ChatTemplateKwargs& kwargs);

}  // namespace pagedgen
