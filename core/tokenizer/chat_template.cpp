// Chat templates without Jinja: recognise a model's template family from distinctive
// fragments of its text, then render with a small function per family that reproduces the
// official template's output byte for byte (tests/test_chat_template.cpp compares against
// Jinja2 renderings of the real template texts).
#include "tokenizer/chat_template.h"

#include <array>
#include <utility>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {

namespace {

constexpr std::array<std::pair<ChatTemplateKind, std::string_view>, 6> kNames = {{
    {ChatTemplateKind::ChatML, "chatml"},
    {ChatTemplateKind::Llama2, "llama2"},
    {ChatTemplateKind::Llama3, "llama3"},
    {ChatTemplateKind::Mistral, "mistral"},
    {ChatTemplateKind::Gemma, "gemma"},
    {ChatTemplateKind::Phi3, "phi3"},
}};

// ---------------------------------------------------------------------------------------
// Reading the template text

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Decodes the Jinja string literal whose opening quote is at text[pos]; advances pos past
// the closing quote (or to the end when it is unterminated). Escapes follow Python's.
std::string read_string_literal(std::string_view text, size_t& pos) {
  const char quote = text[pos++];
  std::string value;
  while (pos < text.size() && text[pos] != quote) {
    if (text[pos] == '\\' && pos + 1 < text.size()) {
      const char escaped = text[pos + 1];
      switch (escaped) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '\\':
        case '\'':
        case '"':
          value += escaped;
          break;
        default:
          value += '\\';
          value += escaped;
          break;
      }
      pos += 2;
    } else {
      value += text[pos++];
    }
  }
  if (pos < text.size()) ++pos;  // the closing quote
  return value;
}

// The string literals inside {{ }} and {% %} blocks, in order, escapes decoded. Template
// text outside blocks and {# #} comments hold no literals. A literal may contain "}}"
// (Qwen2.5's tool instructions do), so blocks end only outside literals.
std::vector<std::string> jinja_string_literals(std::string_view text) {
  std::vector<std::string> literals;
  size_t pos = 0;
  while (pos + 1 < text.size()) {
    const size_t open = text.find('{', pos);
    if (open == std::string_view::npos || open + 1 >= text.size()) break;
    const char kind = text[open + 1];
    if (kind == '#') {
      const size_t end = text.find("#}", open + 2);
      if (end == std::string_view::npos) break;
      pos = end + 2;
      continue;
    }
    if (kind != '{' && kind != '%') {
      pos = open + 1;
      continue;
    }
    const char close = kind == '{' ? '}' : '%';
    pos = open + 2;
    while (pos < text.size()) {
      const char c = text[pos];
      if (c == '\'' || c == '"') {
        literals.push_back(read_string_literal(text, pos));
      } else if (c == close && pos + 1 < text.size() && text[pos + 1] == '}') {
        pos += 2;
        break;
      } else {
        ++pos;
      }
    }
  }
  return literals;
}

// SmolLM2 and Qwen write the system turn they insert as one literal,
// '<|im_start|>system\n<default text><|im_end|>\n'; its text is the default.
std::string chatml_default_system(std::string_view template_text) {
  constexpr std::string_view kPrefix = "<|im_start|>system\n";
  for (const std::string& literal : jinja_string_literals(template_text)) {
    if (!literal.starts_with(kPrefix)) continue;
    const std::string_view rest = std::string_view(literal).substr(kPrefix.size());
    const size_t end = rest.find("<|im_end|>");
    if (end != std::string_view::npos && end > 0) return std::string(rest.substr(0, end));
  }
  return "";
}

// Fingerprints are written with single quotes; templates use either kind.
std::string with_single_quotes(std::string_view text) {
  std::string normalized(text);
  for (char& c : normalized)
    if (c == '"') c = '\'';
  return normalized;
}

// ---------------------------------------------------------------------------------------
// Rendering helpers

// Python's str.strip() with no argument, which Jinja's trim and the templates' .strip()
// call: removes leading and trailing code points that str.isspace() accepts, Unicode ones
// included (NBSP, U+3000, ...). Invalid UTF-8 bytes count as text.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string_view python_strip(std::string_view text) {
  size_t begin = text.size();
  size_t end = 0;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    const bool space = step.status == Utf8Status::Valid && is_python_space(step.code_point);
    if (!space) {
      if (begin == text.size()) begin = pos;
      end = pos + step.length;
    }
    pos += step.length;
  }
  return begin < end ? text.substr(begin, end - begin) : std::string_view();
}

void check_roles(std::span<const ChatMessage> messages, ChatTemplateKind kind) {
  if (messages.empty()) fail("the conversation has no messages; give at least one user message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant")
      fail(
          "messages[{}] has role \"{}\"; the {} chat template supports only \"system\", \"user\" "
          "and \"assistant\"",
          i, role, chat_template_name(kind));
  }
}

// Templates that keep the system message apart (it may only come first) and then require
// user, assistant, user, ... Returns the system content, when there is one.
std::optional<std::string_view> split_alternating(std::span<const ChatMessage> messages, ChatTemplateKind kind) {
  std::optional<std::string_view> system;
  size_t first = 0;
  if (messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const std::string_view expected = (i - first) % 2 == 0 ? "user" : "assistant";
    if (messages[i].role != expected)
      fail(
          "messages[{}] has role \"{}\" where the {} chat template requires \"{}\": only the first "
          "message may be a system message, then roles must alternate user/assistant/user/...",
          i, messages[i].role, chat_template_name(kind), expected);
  }
  return system;
}

// ---------------------------------------------------------------------------------------
// One renderer per family

// <|im_start|>role\ncontent<|im_end|>\n per message; content is not trimmed.
std::string render_chatml(const ChatTemplate& t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out;
  if (!t.default_system.empty() && messages[0].role != "system")
    out += "<|im_start|>system\n" + t.default_system + "<|im_end|>\n";
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

// <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] user [/INST]
// The template strips the whole first turn after joining the system block to it, so the
// system text keeps its spaces and the user text only loses trailing ones there. It has no
// generation prompt: the text always ends ready for the assistant.
std::string render_llama2(const ChatTemplate& t, std::span<const ChatMessage> messages) {
  const std::optional<std::string_view> system = split_alternating(messages, t.kind);
  std::string out;
  const size_t first = system ? 1 : 0;
  for (size_t i = first; i < messages.size(); ++i) {
    std::string content = messages[i].content;
    if (i == first && system) content = "<<SYS>>\n" + std::string(*system) + "\n<</SYS>>\n\n" + content;
    if (messages[i].role == "user")
      out += t.bos_text + "[INST] " + std::string(python_strip(content)) + " [/INST]";
    else
      out += " " + std::string(python_strip(content)) + " " + t.eos_text;
  }
  return out;
}

// <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>...
std::string render_llama3(const ChatTemplate& t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out = t.bos_text;
  for (const ChatMessage& m : messages)
    out +=
        "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + std::string(python_strip(m.content)) + "<|eot_id|>";
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// See MistralStyle. Like Llama 2, no generation prompt: the text ends with [/INST].
std::string render_mistral(const ChatTemplate& t, std::span<const ChatMessage> messages) {
  const std::optional<std::string_view> system = split_alternating(messages, t.kind);
  const bool v1 = t.mistral_style == MistralStyle::V1;
  const size_t first = system ? 1 : 0;
  const size_t system_turn = v1 ? first : messages.size() - 1;  // only if it is a user turn
  std::string out = t.bos_text;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += v1 ? " [INST] " : "[INST] ";
      if (system && i == system_turn) out += std::string(*system) + "\n\n";
      out += m.content;
      out += v1 ? " [/INST]" : "[/INST]";
    } else {
      out += " " + std::string(v1 ? std::string_view(m.content) : python_strip(m.content)) + t.eos_text;
    }
  }
  return out;
}

// <bos><start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n...
// Gemma has no system role: as Gemma 3's template does, the system text and a blank line
// open the first user turn (Gemma 1/2's templates refuse a system message instead).
std::string render_gemma(const ChatTemplate& t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  const std::optional<std::string_view> system = split_alternating(messages, t.kind);
  const size_t first = system ? 1 : 0;
  std::string out = t.bos_text;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    out += "<start_of_turn>";
    out += m.role == "assistant" ? "model" : "user";
    out += "\n";
    if (i == first && system) out += std::string(*system) + "\n\n";
    out += std::string(python_strip(m.content)) + "<end_of_turn>\n";
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

// <|system|>\n...<|end|>\n<|user|>\n...<|end|>\n<|assistant|>\n; without a generation
// prompt the template closes with the EOS text.
std::string render_phi3(const ChatTemplate& t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system" && m.content.empty() && t.skip_empty_system) continue;
    out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
  }
  out += add_generation_prompt ? "<|assistant|>\n" : t.eos_text;
  return out;
}

}  // namespace

std::string_view chat_template_name(ChatTemplateKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  PG_CHECK(false, "ChatTemplateKind {} has no name", static_cast<int>(kind));
  return "";
}

std::vector<std::string_view> chat_template_names() {
  std::vector<std::string_view> names;
  for (const auto& entry : kNames) names.push_back(entry.second);
  return names;
}

std::optional<ChatTemplateKind> chat_template_from_name(std::string_view name) {
  for (const auto& [kind, known] : kNames)
    if (known == name) return kind;
  return std::nullopt;
}

std::optional<ChatTemplate> detect_chat_template(std::string_view template_text, std::string_view bos_text,
                                                 std::string_view eos_text) {
  const std::string text = with_single_quotes(template_text);
  ChatTemplate result{ChatTemplateKind::ChatML, std::string(bos_text), std::string(eos_text), ""};

  if (contains(text, "<|im_start|>") && contains(text, "<|im_end|>")) {
    // Phi-4's <|im_sep|> layout and reasoning templates that rewrite past answers
    // (<think>) are ChatML-like but render differently.
    if (contains(text, "<|im_sep|>") || contains(text, "<think>")) return std::nullopt;
    result.default_system = chatml_default_system(template_text);
    return result;
  }
  if (contains(text, "<|start_header_id|>") && contains(text, "<|eot_id|>")) {
    // Llama 3.1+ templates open with a system block holding a knowledge cutoff and
    // today's date: not reproducible from the messages alone.
    if (contains(text, "date_string") || contains(text, "Cutting Knowledge") || !contains(text, "trim"))
      return std::nullopt;
    result.kind = ChatTemplateKind::Llama3;
    return result;
  }
  if (contains(text, "<start_of_turn>") && contains(text, "<end_of_turn>")) {
    if (!contains(text, "'model'") || !contains(text, "trim")) return std::nullopt;
    result.kind = ChatTemplateKind::Gemma;
    return result;
  }
  if (contains(text, "<|user|>") && contains(text, "<|assistant|>") && contains(text, "<|end|>")) {
    // Phi-3's first GGUF template had no generation prompt and dropped system messages.
    if (!contains(text, "add_generation_prompt")) return std::nullopt;
    result.kind = ChatTemplateKind::Phi3;
    result.skip_empty_system = contains(text, "'system' and message['content']");
    return result;
  }
  if (contains(text, "[INST]")) {
    if (contains(text, "<<SYS>>")) {
      if (!contains(text, "bos_token + '[INST] '") || !contains(text, "content.strip() + ' [/INST]'"))
        return std::nullopt;
      result.kind = ChatTemplateKind::Llama2;
      return result;
    }
    result.kind = ChatTemplateKind::Mistral;
    if (contains(text, "' [INST] '") && contains(text, "' [/INST]'") &&
        contains(text, "loop.first and system_message is defined") &&
        contains(text, "' ' + message['content'] + eos_token")) {
      result.mistral_style = MistralStyle::V1;
      return result;
    }
    if (contains(text, "'[INST] '") && contains(text, "'[/INST]'") &&
        contains(text, "loop.last and system_message is defined") &&
        contains(text, "' ' + message['content']|trim + eos_token")) {
      result.mistral_style = MistralStyle::V3;
      return result;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string render_chat(const ChatTemplate& chat_template, std::span<const ChatMessage> messages,
                        bool add_generation_prompt) {
  check_roles(messages, chat_template.kind);
  switch (chat_template.kind) {
    case ChatTemplateKind::ChatML:
      return render_chatml(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::Llama2:
      return render_llama2(chat_template, messages);
    case ChatTemplateKind::Llama3:
      return render_llama3(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::Mistral:
      return render_mistral(chat_template, messages);
    case ChatTemplateKind::Gemma:
      return render_gemma(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::Phi3:
      return render_phi3(chat_template, messages, add_generation_prompt);
  }
  PG_CHECK(false, "ChatTemplateKind {} has no renderer", static_cast<int>(chat_template.kind));
  return "";
}

}  // namespace pagedgen
