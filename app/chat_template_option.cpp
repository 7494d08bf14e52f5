#include "chat_template_option.h"

#include <fmt/ranges.h>

#include "loader/model_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagedgen::app {

ResolvedChatTemplate resolve_chat_template(const ModelVocabulary& vocabulary, const std::string& name) {
  const Tokenizer& tokenizer = vocabulary.tokenizer();
  const SpecialTokens& s = tokenizer.special();
  const std::string bos = s.bos ? tokenizer.piece(*s.bos) : "";
  const std::string eos = s.eos ? tokenizer.piece(*s.eos) : "";
  const std::optional<std::string>& text = vocabulary.chat_template_text();
  std::optional<ChatTemplate> detected;
  if (text) detected = detect_chat_template(*text, bos, eos);

  if (!name.empty()) {
    const std::optional<ChatTemplateKind> kind = chat_template_from_name(name);
    if (!kind) fail("--chat-template '{}' is unknown (known: {})", name, fmt::join(chat_template_names(), ", "));
    // Keep what the model's own template adds (e.g. a default system message) when it is
    // of the family asked for.
    if (detected && detected->kind == *kind) return {detected, ""};
    return {ChatTemplate{*kind, bos, eos, ""}, ""};
  }
  if (detected) return {detected, ""};
  if (text)
    return {std::nullopt, fmt::format("the model's chat template is not one pagedgen recognises; run with "
                                      "--chat-template NAME (one of {})",
                                      fmt::join(chat_template_names(), ", "))};
  return {std::nullopt, fmt::format("the model has no chat template; run with --chat-template NAME (one of {})",
                                    fmt::join(chat_template_names(), ", "))};
}

std::string chat_template_option_help() {
  return fmt::format("Chat template for `messages` input instead of the one detected from the model ({})",
                     fmt::join(chat_template_names(), ", "));
}

}  // namespace pagedgen::app
