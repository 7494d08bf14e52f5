// Chat templates: family detection on real template texts (tests/data/chat_templates, each
// file's source in the README there) and exact rendered prompts. The expected prompts were
// produced by rendering those real templates with Jinja2 as transformers does
// (tests/data/chat_templates/render_expected.py) and pasted here as literals, so pagedgen's
// hand-written renderers are checked against the templates themselves.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::string read_template(const std::string& file) {
  const auto path = data_dir() / "chat_templates" / file;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

// What detect_chat_template should make of each template file; nullopt kind = refused.
struct Detection {
  std::string file;
  std::string bos;
  std::string eos;
  std::optional<ChatTemplateKind> kind;
  std::string default_system = "";
  MistralStyle mistral_style = MistralStyle::V1;
  bool skip_empty_system = false;
};

const std::vector<Detection>& detections() {
  static const std::vector<Detection> table = {
      {"smollm2-135m-instruct.jinja", "<|im_start|>", "<|im_end|>", ChatTemplateKind::ChatML,
       "You are a helpful AI assistant named SmolLM, trained by Hugging Face"},
      {"qwen2-7b-instruct.jinja", "", "<|im_end|>", ChatTemplateKind::ChatML, "You are a helpful assistant."},
      {"qwen2.5-0.5b-instruct.jinja", "", "<|im_end|>", ChatTemplateKind::ChatML,
       "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
      {"openhermes-2.5-mistral-7b.jinja", "<s>", "<|im_end|>", ChatTemplateKind::ChatML},
      {"llama-2-13b-chat.jinja", "<s>", "</s>", ChatTemplateKind::Llama2},
      {"meta-llama-3-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", ChatTemplateKind::Llama3},
      {"mistral-7b-instruct-v0.2.jinja", "<s>", "</s>", ChatTemplateKind::Mistral, "", MistralStyle::V1},
      {"mistral-large-instruct-2407.jinja", "<s>", "</s>", ChatTemplateKind::Mistral, "", MistralStyle::V3},
      {"gemma-2-2b-it.jinja", "<bos>", "<eos>", ChatTemplateKind::Gemma},
      {"gemma-3-it.jinja", "<bos>", "<eos>", ChatTemplateKind::Gemma},
      {"phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>", ChatTemplateKind::Phi3},
      {"phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>", ChatTemplateKind::Phi3, "", MistralStyle::V1, true},
      // Refused: their output cannot be reproduced from the messages alone (today's date),
      // or differs from every renderer here, or belongs to no family pagedgen knows.
      {"llama-3.2-1b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", std::nullopt},
      {"mistral-7b-instruct-v0.1-original.jinja", "<s>", "</s>", std::nullopt},
      {"phi-3-mini-4k-instruct-gguf-original.jinja", "<s>", "<|endoftext|>", std::nullopt},
      {"deepseek-llm-7b-chat.jinja", "", "", std::nullopt},
  };
  return table;
}

const Detection& detection_for(const std::string& file) {
  const Detection* found = nullptr;
  for (const Detection& d : detections())
    if (d.file == file) found = &d;
  REQUIRE_MESSAGE(found != nullptr, "no detection entry for ", file);
  return *found;
}

// The conversations render_expected.py renders (same names, same contents).
const ChatMessage kSystem{"system", "You are a helpful assistant"};
const std::vector<ChatMessage> kUser = {{"user", "Hello"}};
const std::vector<ChatMessage> kSystemUser = {kSystem, {"user", "Hello"}};
const std::vector<ChatMessage> kMultiTurn = {kSystem,
                                             {"user", "Hello"},
                                             {"assistant", "Hi there"},
                                             {"user", "Who are you"},
                                             {"assistant", "   I am an assistant   "},
                                             {"user", "Another question"}};
const std::vector<ChatMessage> kMultiTurnNoSystem = {
    {"user", "Hello"}, {"assistant", "Hi there"}, {"user", "Who are you"}};
const std::vector<ChatMessage> kEndsWithAssistant = {{"user", "Hello"}, {"assistant", "Hi there"}};
const std::vector<ChatMessage> kPadded = {
    {"system", " Be brief. "}, {"user", "  What is 2+2?\n"}, {"assistant", " 4 "}, {"user", "\tAnd 3+3? "}};
const std::vector<ChatMessage> kUnicodeSpace = {{"user", "\302\240Bonjour\343\200\200"}};  // NBSP, U+3000
const std::vector<ChatMessage> kEmptySystem = {{"system", ""}, {"user", "Hi"}};
const std::vector<ChatMessage> kUserUser = {{"user", "Hello"}, {"user", "Again"}};

struct Rendering {
  std::string file;
  const std::vector<ChatMessage>& messages;
  bool add_generation_prompt;
  std::optional<std::string> expected;  // nullopt: the real template raises an exception
};

// Jinja2's output for each real template (nullopt where the template raises). Not listed:
// Gemma 2 with a system message, which its template refuses and pagedgen folds into the
// first user turn as Gemma 3's does.
const std::vector<Rendering>& renderings() {
  static const std::vector<Rendering> table = {
      // clang-format off
// Generated by tests/data/chat_templates/render_expected.py (jinja2 3.1.6).
    {"smollm2-135m-instruct.jinja", kUser, true, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kUser, false, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"},
    {"smollm2-135m-instruct.jinja", kSystemUser, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kMultiTurn, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kMultiTurnNoSystem, true, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kMultiTurnNoSystem, false, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"},
    {"smollm2-135m-instruct.jinja", kEndsWithAssistant, true, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kEndsWithAssistant, false, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n"},
    {"smollm2-135m-instruct.jinja", kPadded, true, "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\n  What is 2+2?\n<|im_end|>\n<|im_start|>assistant\n 4 <|im_end|>\n<|im_start|>user\n\tAnd 3+3? <|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kUnicodeSpace, true, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n\302\240Bonjour\343\200\200<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kEmptySystem, true, "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", kUserUser, true, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kUser, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kUser, false, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"},
    {"qwen2-7b-instruct.jinja", kSystemUser, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kMultiTurn, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kMultiTurnNoSystem, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kMultiTurnNoSystem, false, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"},
    {"qwen2-7b-instruct.jinja", kEndsWithAssistant, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kEndsWithAssistant, false, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n"},
    {"qwen2-7b-instruct.jinja", kPadded, true, "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\n  What is 2+2?\n<|im_end|>\n<|im_start|>assistant\n 4 <|im_end|>\n<|im_start|>user\n\tAnd 3+3? <|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kUnicodeSpace, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n\302\240Bonjour\343\200\200<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kEmptySystem, true, "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", kUserUser, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kUser, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kUser, false, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"},
    {"qwen2.5-0.5b-instruct.jinja", kSystemUser, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kMultiTurn, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kMultiTurnNoSystem, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kMultiTurnNoSystem, false, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"},
    {"qwen2.5-0.5b-instruct.jinja", kEndsWithAssistant, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kEndsWithAssistant, false, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n"},
    {"qwen2.5-0.5b-instruct.jinja", kPadded, true, "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\n  What is 2+2?\n<|im_end|>\n<|im_start|>assistant\n 4 <|im_end|>\n<|im_start|>user\n\tAnd 3+3? <|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kUnicodeSpace, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n\302\240Bonjour\343\200\200<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kEmptySystem, true, "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", kUserUser, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kUser, true, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kUser, false, "<|im_start|>user\nHello<|im_end|>\n"},
    {"openhermes-2.5-mistral-7b.jinja", kSystemUser, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kMultiTurn, true, "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kMultiTurnNoSystem, true, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kMultiTurnNoSystem, false, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"},
    {"openhermes-2.5-mistral-7b.jinja", kEndsWithAssistant, true, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kEndsWithAssistant, false, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n"},
    {"openhermes-2.5-mistral-7b.jinja", kPadded, true, "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\n  What is 2+2?\n<|im_end|>\n<|im_start|>assistant\n 4 <|im_end|>\n<|im_start|>user\n\tAnd 3+3? <|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kUnicodeSpace, true, "<|im_start|>user\n\302\240Bonjour\343\200\200<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kEmptySystem, true, "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", kUserUser, true, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n"},
    {"llama-2-13b-chat.jinja", kUser, true, "<s>[INST] Hello [/INST]"},
    {"llama-2-13b-chat.jinja", kUser, false, "<s>[INST] Hello [/INST]"},
    {"llama-2-13b-chat.jinja", kSystemUser, true, "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]"},
    {"llama-2-13b-chat.jinja", kMultiTurn, true, "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you [/INST] I am an assistant </s><s>[INST] Another question [/INST]"},
    {"llama-2-13b-chat.jinja", kMultiTurnNoSystem, true, "<s>[INST] Hello [/INST] Hi there </s><s>[INST] Who are you [/INST]"},
    {"llama-2-13b-chat.jinja", kMultiTurnNoSystem, false, "<s>[INST] Hello [/INST] Hi there </s><s>[INST] Who are you [/INST]"},
    {"llama-2-13b-chat.jinja", kEndsWithAssistant, true, "<s>[INST] Hello [/INST] Hi there </s>"},
    {"llama-2-13b-chat.jinja", kEndsWithAssistant, false, "<s>[INST] Hello [/INST] Hi there </s>"},
    {"llama-2-13b-chat.jinja", kPadded, true, "<s>[INST] <<SYS>>\n Be brief. \n<</SYS>>\n\n  What is 2+2? [/INST] 4 </s><s>[INST] And 3+3? [/INST]"},
    {"llama-2-13b-chat.jinja", kUnicodeSpace, true, "<s>[INST] Bonjour [/INST]"},
    {"llama-2-13b-chat.jinja", kEmptySystem, true, "<s>[INST] <<SYS>>\n\n<</SYS>>\n\nHi [/INST]"},
    {"llama-2-13b-chat.jinja", kUserUser, true, std::nullopt},
    {"meta-llama-3-8b-instruct.jinja", kUser, true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kUser, false, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"},
    {"meta-llama-3-8b-instruct.jinja", kSystemUser, true, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kMultiTurn, true, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kMultiTurnNoSystem, true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kMultiTurnNoSystem, false, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"},
    {"meta-llama-3-8b-instruct.jinja", kEndsWithAssistant, true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kEndsWithAssistant, false, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"},
    {"meta-llama-3-8b-instruct.jinja", kPadded, true, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kUnicodeSpace, true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nBonjour<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kEmptySystem, true, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", kUserUser, true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAgain<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"mistral-7b-instruct-v0.2.jinja", kUser, true, "<s> [INST] Hello [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kUser, false, "<s> [INST] Hello [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kSystemUser, true, "<s> [INST] You are a helpful assistant\n\nHello [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kMultiTurn, true, "<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an assistant   </s> [INST] Another question [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kMultiTurnNoSystem, true, "<s> [INST] Hello [/INST] Hi there</s> [INST] Who are you [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kMultiTurnNoSystem, false, "<s> [INST] Hello [/INST] Hi there</s> [INST] Who are you [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kEndsWithAssistant, true, "<s> [INST] Hello [/INST] Hi there</s>"},
    {"mistral-7b-instruct-v0.2.jinja", kEndsWithAssistant, false, "<s> [INST] Hello [/INST] Hi there</s>"},
    {"mistral-7b-instruct-v0.2.jinja", kPadded, true, "<s> [INST]  Be brief. \n\n  What is 2+2?\n [/INST]  4 </s> [INST] \tAnd 3+3?  [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kUnicodeSpace, true, "<s> [INST] \302\240Bonjour\343\200\200 [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kEmptySystem, true, "<s> [INST] \n\nHi [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", kUserUser, true, std::nullopt},
    {"mistral-large-instruct-2407.jinja", kUser, true, "<s>[INST] Hello[/INST]"},
    {"mistral-large-instruct-2407.jinja", kUser, false, "<s>[INST] Hello[/INST]"},
    {"mistral-large-instruct-2407.jinja", kSystemUser, true, "<s>[INST] You are a helpful assistant\n\nHello[/INST]"},
    {"mistral-large-instruct-2407.jinja", kMultiTurn, true, "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>[INST] You are a helpful assistant\n\nAnother question[/INST]"},
    {"mistral-large-instruct-2407.jinja", kMultiTurnNoSystem, true, "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST]"},
    {"mistral-large-instruct-2407.jinja", kMultiTurnNoSystem, false, "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST]"},
    {"mistral-large-instruct-2407.jinja", kEndsWithAssistant, true, "<s>[INST] Hello[/INST] Hi there</s>"},
    {"mistral-large-instruct-2407.jinja", kEndsWithAssistant, false, "<s>[INST] Hello[/INST] Hi there</s>"},
    {"mistral-large-instruct-2407.jinja", kPadded, true, "<s>[INST]   What is 2+2?\n[/INST] 4</s>[INST]  Be brief. \n\n\tAnd 3+3? [/INST]"},
    {"mistral-large-instruct-2407.jinja", kUnicodeSpace, true, "<s>[INST] \302\240Bonjour\343\200\200[/INST]"},
    {"mistral-large-instruct-2407.jinja", kEmptySystem, true, "<s>[INST] \n\nHi[/INST]"},
    {"mistral-large-instruct-2407.jinja", kUserUser, true, std::nullopt},
    {"gemma-2-2b-it.jinja", kUser, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-2-2b-it.jinja", kUser, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n"},
    {"gemma-2-2b-it.jinja", kMultiTurnNoSystem, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-2-2b-it.jinja", kMultiTurnNoSystem, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"},
    {"gemma-2-2b-it.jinja", kEndsWithAssistant, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-2-2b-it.jinja", kEndsWithAssistant, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"},
    {"gemma-2-2b-it.jinja", kUnicodeSpace, true, "<bos><start_of_turn>user\nBonjour<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-2-2b-it.jinja", kUserUser, true, std::nullopt},
    {"gemma-3-it.jinja", kUser, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kUser, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n"},
    {"gemma-3-it.jinja", kSystemUser, true, "<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kMultiTurn, true, "<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kMultiTurnNoSystem, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kMultiTurnNoSystem, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"},
    {"gemma-3-it.jinja", kEndsWithAssistant, true, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kEndsWithAssistant, false, "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"},
    {"gemma-3-it.jinja", kPadded, true, "<bos><start_of_turn>user\n Be brief. \n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<start_of_turn>user\nAnd 3+3?<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kUnicodeSpace, true, "<bos><start_of_turn>user\nBonjour<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kEmptySystem, true, "<bos><start_of_turn>user\n\n\nHi<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", kUserUser, true, std::nullopt},
    {"phi-3-mini-4k-instruct.jinja", kUser, true, "<|user|>\nHello<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kUser, false, "<|user|>\nHello<|end|>\n<|endoftext|>"},
    {"phi-3-mini-4k-instruct.jinja", kSystemUser, true, "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kMultiTurn, true, "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kMultiTurnNoSystem, true, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kMultiTurnNoSystem, false, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|endoftext|>"},
    {"phi-3-mini-4k-instruct.jinja", kEndsWithAssistant, true, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kEndsWithAssistant, false, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|endoftext|>"},
    {"phi-3-mini-4k-instruct.jinja", kPadded, true, "<|system|>\n Be brief. <|end|>\n<|user|>\n  What is 2+2?\n<|end|>\n<|assistant|>\n 4 <|end|>\n<|user|>\n\tAnd 3+3? <|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kUnicodeSpace, true, "<|user|>\n\302\240Bonjour\343\200\200<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kEmptySystem, true, "<|system|>\n<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", kUserUser, true, "<|user|>\nHello<|end|>\n<|user|>\nAgain<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kUser, true, "<|user|>\nHello<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kUser, false, "<|user|>\nHello<|end|>\n<|endoftext|>"},
    {"phi-3.5-mini-instruct.jinja", kSystemUser, true, "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kMultiTurn, true, "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kMultiTurnNoSystem, true, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kMultiTurnNoSystem, false, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|endoftext|>"},
    {"phi-3.5-mini-instruct.jinja", kEndsWithAssistant, true, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kEndsWithAssistant, false, "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|endoftext|>"},
    {"phi-3.5-mini-instruct.jinja", kPadded, true, "<|system|>\n Be brief. <|end|>\n<|user|>\n  What is 2+2?\n<|end|>\n<|assistant|>\n 4 <|end|>\n<|user|>\n\tAnd 3+3? <|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kUnicodeSpace, true, "<|user|>\n\302\240Bonjour\343\200\200<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kEmptySystem, true, "<|user|>\nHi<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", kUserUser, true, "<|user|>\nHello<|end|>\n<|user|>\nAgain<|end|>\n<|assistant|>\n"},
  };
  // clang-format on
  return table;
}

ChatTemplate detect_file(const Detection& d) {
  const auto detected = detect_chat_template(read_template(d.file), d.bos, d.eos);
  REQUIRE_MESSAGE(detected.has_value(), d.file, " was not recognised");
  return *detected;
}

void check_error_mentions(const std::function<void()>& action, std::initializer_list<std::string_view> words) {
  try {
    action();
    FAIL("expected pagedgen::Error");
  } catch (const Error& e) {
    const std::string message = e.what();
    for (std::string_view word : words)
      CHECK_MESSAGE(message.find(word) != std::string::npos, "expected '", word, "' in: ", message);
  }
}

}  // namespace

TEST_CASE("chat template names round-trip and unknown names are refused") {
  const std::vector<std::string_view> names = chat_template_names();
  CHECK(names == std::vector<std::string_view>{"chatml", "llama2", "llama3", "mistral", "gemma", "phi3"});
  for (std::string_view name : names) {
    const auto kind = chat_template_from_name(name);
    REQUIRE(kind.has_value());
    CHECK(chat_template_name(*kind) == name);
  }
  CHECK_FALSE(chat_template_from_name("vicuna").has_value());
  CHECK_FALSE(chat_template_from_name("ChatML").has_value());
  CHECK_FALSE(chat_template_from_name("").has_value());
}

TEST_CASE("real template texts are recognised by family, with their variant details") {
  for (const Detection& d : detections()) {
    CAPTURE(d.file);
    const auto detected = detect_chat_template(read_template(d.file), d.bos, d.eos);
    REQUIRE(detected.has_value() == d.kind.has_value());
    if (!detected) continue;
    CHECK(detected->kind == *d.kind);
    CHECK(detected->bos_text == d.bos);
    CHECK(detected->eos_text == d.eos);
    CHECK(detected->default_system == d.default_system);
    if (d.kind == ChatTemplateKind::Mistral) CHECK(detected->mistral_style == d.mistral_style);
    CHECK(detected->skip_empty_system == d.skip_empty_system);
  }
}

TEST_CASE("texts of no known family give nullopt") {
  CHECK_FALSE(detect_chat_template("", "<s>", "</s>").has_value());
  CHECK_FALSE(detect_chat_template("{{ messages[0]['content'] }}", "<s>", "</s>").has_value());
  // Phi-4: <|im_start|> with <|im_sep|>, which ChatML does not have.
  CHECK_FALSE(detect_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + '<|im_sep|>' + "
                                   "message['content'] + '<|im_end|>'}}{% endfor %}",
                                   "", "")
                  .has_value());
}

TEST_CASE("rendered prompts equal what the real templates produce") {
  int compared = 0;
  for (const Rendering& r : renderings()) {
    const Detection& d = detection_for(r.file);
    const ChatTemplate chat_template = detect_file(d);
    CAPTURE(r.file);
    CAPTURE(r.add_generation_prompt);
    CAPTURE(r.messages.size());
    if (r.expected) {
      CHECK(render_chat(chat_template, r.messages, r.add_generation_prompt) == *r.expected);
    } else {
      CHECK_THROWS_AS(render_chat(chat_template, r.messages, r.add_generation_prompt), Error);
    }
    ++compared;
  }
  CHECK(compared == static_cast<int>(renderings().size()));
}

TEST_CASE("a template chosen by name renders as its family's detected template does") {
  // --chat-template NAME without a model template: the family's first variant, no default
  // system message.
  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  const ChatTemplate mistral{ChatTemplateKind::Mistral, "<s>", "</s>", ""};
  CHECK(render_chat(mistral, messages, true) == "<s> [INST] Hi [/INST]");
  const ChatTemplate chatml{ChatTemplateKind::ChatML, "", "", ""};
  CHECK(render_chat(chatml, messages, true) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const ChatTemplate phi3{ChatTemplateKind::Phi3, "<s>", "<|endoftext|>", ""};
  CHECK(render_chat(phi3, kEmptySystem, true) == "<|system|>\n<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST_CASE("unsupported roles and shapes throw Error naming the message") {
  const ChatTemplate chatml = detect_file(detection_for("smollm2-135m-instruct.jinja"));
  const std::vector<ChatMessage> tool = {{"user", "Hi"}, {"tool", "42"}};
  check_error_mentions([&] { render_chat(chatml, tool, true); }, {"messages[1]", "\"tool\"", "chatml"});

  const std::vector<ChatMessage> no_messages;
  check_error_mentions([&] { render_chat(chatml, no_messages, true); }, {"no messages"});

  const ChatTemplate llama2 = detect_file(detection_for("llama-2-13b-chat.jinja"));
  const std::vector<ChatMessage> starts_with_assistant = {{"system", "S"}, {"assistant", "A"}};
  check_error_mentions([&] { render_chat(llama2, starts_with_assistant, true); },
                       {"messages[1]", "\"assistant\"", "llama2", "alternate"});

  const ChatTemplate mistral = detect_file(detection_for("mistral-large-instruct-2407.jinja"));
  const std::vector<ChatMessage> late_system = {{"user", "U"}, {"assistant", "A"}, {"system", "S"}};
  check_error_mentions([&] { render_chat(mistral, late_system, true); }, {"messages[2]", "\"system\"", "mistral"});
  check_error_mentions([&] { render_chat(mistral, kUserUser, true); }, {"messages[1]", "\"user\""});

  const ChatTemplate gemma = detect_file(detection_for("gemma-3-it.jinja"));
  const std::vector<ChatMessage> gemma_order = {{"system", "S"}, {"user", "U"}, {"user", "U2"}};
  check_error_mentions([&] { render_chat(gemma, gemma_order, true); }, {"messages[2]", "gemma"});
}

TEST_CASE("the default model's GGUF template is ChatML with SmolLM2's default system text") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("default model not installed (scripts/fetch-model.sh); skipping");
    return;
  }
  const GgufFile gguf(*model);
  const auto text = gguf.get_string("tokenizer.chat_template");
  REQUIRE(text.has_value());
  CHECK(*text == read_template("smollm2-135m-instruct.jinja"));
  const auto detected = detect_chat_template(*text, "<|im_start|>", "<|im_end|>");
  REQUIRE(detected.has_value());
  CHECK(detected->kind == ChatTemplateKind::ChatML);
  CHECK(detected->default_system == "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  const std::vector<ChatMessage> messages = {{"user", "What is the capital of France?"}};
  CHECK(render_chat(*detected, messages, true) ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
}
