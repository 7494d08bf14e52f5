// The chat templates `--chat-template NAME` names (chatml, llama2, llama3, mistral, gemma,
// phi3): real Jinja templates of those families, for models whose file carries none (Gemma 3
// 270M) or to render a family's format instead of the model's own.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace pagedgen {

// The names, for --help and error messages.
std::vector<std::string_view> builtin_chat_template_names();

// The Jinja text of a name; nullopt when it is none of them.
std::optional<std::string_view> builtin_chat_template(std::string_view name);

}  // namespace pagedgen
