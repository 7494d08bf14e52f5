// Chat templates: render `messages` into the prompt text a model was trained on.
// Families are recognised from the model's template text (GGUF tokenizer.chat_template or
// tokenizer_config.json); `--chat-template NAME` overrides. No Jinja: one small renderer
// per family, each checked against the template's documented output.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pagedgen {

enum class ChatTemplateKind { ChatML, Llama2, Llama3, Mistral, Gemma, Phi3 };

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

struct ChatTemplate {
  ChatTemplateKind kind;
  // Text for special tokens the template writes itself (e.g. "<s>" for Llama 2).
  std::string bos_text;
  std::string eos_text;
  // System message the template inserts when the conversation has none (SmolLM2's
  // ChatML template does this); empty when it inserts none.
  std::string default_system;
};

std::string_view chat_template_name(ChatTemplateKind kind);
// All names accepted by --chat-template, for --help and error messages.
std::vector<std::string_view> chat_template_names();
std::optional<ChatTemplateKind> chat_template_from_name(std::string_view name);

// Recognises the family of a Jinja template text; nullopt when it is none we know.
std::optional<ChatTemplate> detect_chat_template(std::string_view template_text,
                                                 std::string_view bos_text,
                                                 std::string_view eos_text);

// Renders the conversation. The result contains special-token text and is tokenized with
// parse_special = true and without adding BOS. Throws Error for a role the family does not
// support or a conversation shape it rejects (e.g. Llama 2 requires alternating turns).
std::string render_chat(const ChatTemplate& chat_template, std::span<const ChatMessage> messages,
                        bool add_generation_prompt);

}  // namespace pagedgen
