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

// The Mistral template generations pagedgen reproduces (named after Mistral's tokenizer
// versions); they differ in spacing and in where the system message goes:
//   V1 (Mistral-7B-Instruct v0.1/v0.2, Mixtral-8x7B): "<s> [INST] system\n\nuser [/INST] answer</s>",
//      the system message joined to the first user turn;
//   V3 (Mistral-7B-Instruct v0.3, Mistral-Large-2407): "<s>[INST] user[/INST] answer</s>",
//      the system message joined to the last user turn, answers trimmed.
enum class MistralStyle { V1, V3 };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
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
  // Kind Mistral only (by name: V1).
  MistralStyle mistral_style = MistralStyle::V1;
  // Kind Phi3 only: Phi-3.5's template leaves out a system message with empty content,
  // Phi-3's writes it.
  bool skip_empty_system = false;
};

std::string_view chat_template_name(ChatTemplateKind kind);
// All names accepted by --chat-template, for --help and error messages.
std::vector<std::string_view> chat_template_names();
std::optional<ChatTemplateKind> chat_template_from_name(std::string_view name);

// Recognises the family of a Jinja template text; nullopt when it is none we know, or a
// variant whose output we cannot reproduce exactly (e.g. Llama 3.1+ templates that write
// today's date, Mistral's original v0.1 template, Phi-3's first GGUF template).
std::optional<ChatTemplate> detect_chat_template(std::string_view template_text, std::string_view bos_text,
                                                 std::string_view eos_text);

// Renders the conversation. The result contains special-token text and is tokenized with
// parse_special = true and without adding BOS. Throws Error for a role the family does not
// support or a conversation shape it rejects (e.g. Llama 2 requires alternating turns).
std::string render_chat(const ChatTemplate& chat_template, std::span<const ChatMessage> messages,
                        bool add_generation_prompt);

}  // namespace pagedgen
