// The chat-template flags of `generate`, `plan`, `sweep`, `complete` and `render`, and the
// template they select: --chat-template NAME (a built-in template of that family) or FILE (a
// Jinja file, as `vllm serve --chat-template` takes), else the model's own template;
// --chat-template-date, the date strftime_now formats; --chat-template-kwargs, extra
// template variables for every line.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "tokenizer/chat_template.h"

namespace pagedgen {
class ModelVocabulary;
}

namespace pagedgen::app {

struct ChatTemplateOptions {
  std::string chat_template;  // NAME or FILE; empty: the model's own
  std::string date;           // YYYY-MM-DD; empty: today (generate --resume: the date the run recorded)
  std::string kwargs;         // a JSON object's text; empty: none
};

// Adds the three flags. Each is checked when the command line is parsed (exit 2): a FILE
// that cannot be read or does not parse (naming its line), a date that is not YYYY-MM-DD,
// kwargs that are not a JSON object.
void add_chat_template_options(CLI::App& command, ChatTemplateOptions& options);

// --chat-template-date, else `recorded` (the date the resumed run's manifest holds), else
// today's local date (as transformers' strftime_now reads the clock): YYYY-MM-DD.
std::string chat_template_date(const ChatTemplateOptions& options, const std::optional<std::string>& recorded);

// What the manifest records of --chat-template: "auto", the NAME, or "file bytes=N
// fnv1a64=X" (the file's content, wherever it is).
std::string chat_template_setting(const std::string& chat_template);

struct ResolvedChatTemplate {
  std::optional<ChatTemplate> chat_template;
  std::string reason_if_none;  // why there is none (the model has none, or it does not parse)
};

// The template the options select, rendering with the model's BOS and EOS texts, on
// options.date (today when empty). Throws Error when a FILE can no longer be read.
ResolvedChatTemplate resolve_chat_template(const ModelVocabulary& vocabulary, const ChatTemplateOptions& options);

}  // namespace pagedgen::app
