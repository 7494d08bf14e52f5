// PromptBuilder: turns a Request into the token ids the engine decodes (plain prompt, or
// messages through the chat template, then truncate_prompt_tokens), with its bad_words
// tokenized, or into the error record of that line when it cannot run (no chat template,
// bad conversation, empty or too long prompt, a logit_bias or allowed_token_ids id outside
// the vocabulary, a bad word with no token, a sampling field the backend does not do).
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "engine/prepared_request.h"
#include "io/request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

// What the backend leaves undone of the sampling fields (Backend::applies_token_masks,
// applies_penalties, computes_logprobs), each with the message of the unsupported_field
// records of the lines that ask for it; nullopt: the backend does it.
struct UnsupportedSampling {
  std::optional<std::string> token_masks;  // a constrained response_format, allowed_token_ids
  std::optional<std::string> penalties;    // presence/frequency/repetition_penalty, logit_bias
  std::optional<std::string> logprobs;     // logprobs, top_logprobs, prompt_logprobs
};

class PromptBuilder {
 public:
  // `chat_template` is nullopt when there is none to use (the model has none, or its text
  // does not parse); `no_template_reason` then says why, for the error records of chat lines.
  PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> chat_template, std::string no_template_reason,
                int64_t max_model_len, UnsupportedSampling unsupported = {});

  std::variant<PreparedRequest, RequestError> build(const Request& request) const;

  // The prompt's text: a plain prompt as given, a conversation through the chat template
  // (special-token text included, as build() tokenizes it); or the line's error record.
  std::variant<std::string, RequestError> prompt_text(const Request& request) const;
  // The text of a built prompt's ids, special-token text included: what the model is given
  // once truncate_prompt_tokens has cut the prompt.
  std::string text_of(const PreparedRequest& prepared) const { return tokenizer_.decode(prepared.prompt_ids, true); }

 private:
  // The error record of a request whose sampling fields this model or backend cannot run.
  std::optional<RequestError> check_sampling(const Request& request) const;
  // A token-id prompt's ids outside the vocabulary: the line's invalid_value.
  std::optional<RequestError> check_prompt_ids(const Request& request) const;
  // Keeps the last truncate_prompt_tokens prompt ids (-1: max_model_len - 1).
  void truncate_prompt(PreparedRequest& prepared) const;

  const Tokenizer& tokenizer_;
  std::optional<ChatTemplate> chat_template_;
  std::string no_template_reason_;
  int64_t max_model_len_;
  UnsupportedSampling unsupported_;
};

}  // namespace pagedgen
