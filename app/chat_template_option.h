// Which chat template a command uses: the one named by --chat-template, else the one
// detected from the model's own template text. Shared by `generate` and `complete`.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/chat_template.h"

namespace pagedgen {
class ModelVocabulary;
}

namespace pagedgen::app {

struct ResolvedChatTemplate {
  std::optional<ChatTemplate> chat_template;
  std::string reason_if_none;  // why there is none, for error messages
};

// Throws Error when `name` is given but unknown.
ResolvedChatTemplate resolve_chat_template(const ModelVocabulary& vocabulary, const std::string& name);

// Help text of --chat-template.
std::string chat_template_option_help();

}  // namespace pagedgen::app
