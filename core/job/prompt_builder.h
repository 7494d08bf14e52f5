// PromptBuilder: turns a Request into the token ids the engine decodes (plain prompt, or
// messages through the chat template), or into the error record of that line when it
// cannot run (no chat template, bad conversation, empty or too long prompt, a structured
// output on a backend that applies no token masks).
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "engine/prepared_request.h"
#include "io/request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class PromptBuilder {
 public:
  // `chat_template` is nullopt when the model has none pagedgen recognises;
  // `no_template_reason` then says why, for the error records of chat lines.
  // `no_token_masks_reason`: set when the backend applies no token masks
  // (Backend::applies_token_masks), saying so for the error records (unsupported_field) of
  // lines whose response format is constrained.
  PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> chat_template,
                std::string no_template_reason, int64_t max_model_len,
                std::optional<std::string> no_token_masks_reason = std::nullopt);

  std::variant<PreparedRequest, RequestError> build(const Request& request) const;

 private:
  const Tokenizer& tokenizer_;
  std::optional<ChatTemplate> chat_template_;
  std::string no_template_reason_;
  int64_t max_model_len_;
  std::optional<std::string> no_token_masks_reason_;
};

}  // namespace pagedgen
