// The chat template of a model file as `generate` renders it by default: the model's own
// Jinja text with its BOS and EOS texts (the default model's template reads no date).
#pragma once

#include <chrono>
#include <string>

#include "jinja/template.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen::test {

inline ChatTemplate model_chat_template(const std::string& template_text, const Tokenizer& tokenizer) {
  const SpecialTokens& special = tokenizer.special();
  return ChatTemplate(jinja::Template::parse(template_text), special.bos ? tokenizer.piece(*special.bos) : "",
                      special.eos ? tokenizer.piece(*special.eos) : "", std::chrono::year(2025) / 3 / 9);
}

}  // namespace pagedgen::test
