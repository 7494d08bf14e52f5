// Fuzz target: chat templates. The input is parts separated by 0x1E: a template text, the
// BOS and EOS texts, then role and content of each message (at most 16). The template is
// detected and, when recognised, rendered; every family renders the messages too, with and
// without the generation prompt. Error (a role or shape a family rejects) is fine. The
// name lookup takes the template text as a name.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t end = text.find(separator);
    parts.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return parts;
    text.remove_prefix(end + 1);
  }
}

void render(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages) {
  for (const bool add_generation_prompt : {false, true}) {
    try {
      (void)render_chat(chat_template, messages, add_generation_prompt);
    } catch (const Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> parts = split(fuzz::as_text(data, size), '\x1e');
  const std::string_view template_text = parts[0];
  const std::string_view bos = parts.size() > 1 ? parts[1] : "";
  const std::string_view eos = parts.size() > 2 ? parts[2] : "";
  std::vector<ChatMessage> messages;
  for (std::size_t i = 3; i + 1 < parts.size() && messages.size() < 16; i += 2)
    messages.push_back({std::string(parts[i]), std::string(parts[i + 1])});

  (void)chat_template_from_name(template_text);
  if (const std::optional<ChatTemplate> detected = detect_chat_template(template_text, bos, eos))
    render(*detected, messages);
  for (const std::string_view name : chat_template_names()) {
    ChatTemplate chosen{*chat_template_from_name(name), std::string(bos), std::string(eos), ""};
    render(chosen, messages);
    chosen.default_system = "You are a helpful assistant.";
    chosen.mistral_style = MistralStyle::V3;
    chosen.skip_empty_system = true;
    render(chosen, messages);
  }
  return 0;
}
