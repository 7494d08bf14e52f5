// The real chat templates of tests/data/chat_templates (sources in the README there),
// parsed and rendered by the jinja interpreter, compared byte for byte with what Python's
// jinja2 3.1 renders under transformers' settings (pasted as literals; nullopt where
// jinja2 raises, as Mistral v0.1's template does for a system message).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <optional>

#include "test_jinja_render.h"
#include "test_paths.h"
#include "util/json_quote.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

const char* const kMultiTurn =
    R"([{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "Who are you"}, {"role": "assistant", "content": "   I am an assistant   "}, {"role": "user", "content": "Another question"}])";
const char* const kUnicode =
    R"([{"role": "user", "content": "Ça va? ✓ \"quoted\""}, {"role": "assistant", "content": "Oui"}, {"role": "user", "content": "Et toi?\n"}])";

struct RealRender {
  const char* file;
  const char* bos;
  const char* eos;
  const char* messages;
  bool add_generation_prompt;
  std::optional<std::string> expected;
};

// Generated with jinja2 3.1.6 (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, transformers' raise_exception).
const RealRender kRenders[] = {
    {"smollm2-135m-instruct.jinja", "<|im_start|>", "<|im_end|>", kMultiTurn, true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi "
     "there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
     "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"smollm2-135m-instruct.jinja", "<|im_start|>", "<|im_end|>", kUnicode, false,
     "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
     "Face<|im_end|>\n<|im_start|>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<|im_end|>\n<|im_start|>assistant\nOui<|im_end|>\n<|im_start|>user\nEt toi?\n<|im_end|>\n"},
    {"qwen2-7b-instruct.jinja", "", "<|im_end|>", kMultiTurn, true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi "
     "there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
     "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2-7b-instruct.jinja", "", "<|im_end|>", kUnicode, false,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<|im_end|>\n<|im_start|>assistant\nOui<|im_end|>\n<|im_start|>user\nEt toi?\n<|im_end|>\n"},
    {"qwen2.5-0.5b-instruct.jinja", "", "<|im_end|>", kMultiTurn, true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi "
     "there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
     "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"qwen2.5-0.5b-instruct.jinja", "", "<|im_end|>", kUnicode, false,
     "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
     "assistant.<|im_end|>\n<|im_start|>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<|im_end|>\n<|im_start|>assistant\nOui<|im_end|>\n<|im_start|>user\nEt toi?\n<|im_end|>\n"},
    {"openhermes-2.5-mistral-7b.jinja", "<s>", "<|im_end|>", kMultiTurn, true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi "
     "there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
     "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"openhermes-2.5-mistral-7b.jinja", "<s>", "<|im_end|>", kUnicode, false,
     "<|im_start|>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<|im_end|>\n<|im_start|>assistant\nOui<|im_end|>\n<|im_start|>user\nEt toi?\n<|im_end|>\n"},
    {"llama-2-13b-chat.jinja", "<s>", "</s>", kMultiTurn, true,
     "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you "
     "[/INST] I am an assistant </s><s>[INST] Another question [/INST]"},
    {"llama-2-13b-chat.jinja", "<s>", "</s>", kUnicode, false,
     "<s>[INST] \303\207a va? \342\234\223 \"quoted\" [/INST] Oui </s><s>[INST] Et toi? [/INST]"},
    {"meta-llama-3-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", kMultiTurn, true,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
     "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_"
     "header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are "
     "you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
     "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother "
     "question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-3-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", kUnicode, false,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n\303\207a va? \342\234\223 "
     "\"quoted\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nOui<|eot_id|><|start_header_id|>user<|end_"
     "header_id|>\n\nEt toi?<|eot_id|>"},
    {"llama-3.2-1b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", kMultiTurn, true,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday "
     "Date: 06 Dec 2026\n\nYou are a helpful "
     "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_"
     "header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are "
     "you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
     "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother "
     "question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"llama-3.2-1b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", kUnicode, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday "
     "Date: 06 Dec 2026\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n\303\207a va? \342\234\223 "
     "\"quoted\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nOui<|eot_id|><|start_header_id|>user<|end_"
     "header_id|>\n\nEt toi?<|eot_id|>"},
    {"mistral-7b-instruct-v0.1-original.jinja", "<s>", "</s>", kMultiTurn, true, std::nullopt},
    {"mistral-7b-instruct-v0.1-original.jinja", "<s>", "</s>", kUnicode, false,
     "<s>[INST] \303\207a va? \342\234\223 \"quoted\" [/INST]Oui</s> [INST] Et toi?\n [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", "<s>", "</s>", kMultiTurn, true,
     "<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an "
     "assistant   </s> [INST] Another question [/INST]"},
    {"mistral-7b-instruct-v0.2.jinja", "<s>", "</s>", kUnicode, false,
     "<s> [INST] \303\207a va? \342\234\223 \"quoted\" [/INST] Oui</s> [INST] Et toi?\n [/INST]"},
    {"mistral-large-instruct-2407.jinja", "<s>", "</s>", kMultiTurn, true,
     "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>[INST] You are a helpful "
     "assistant\n\nAnother question[/INST]"},
    {"mistral-large-instruct-2407.jinja", "<s>", "</s>", kUnicode, false,
     "<s>[INST] \303\207a va? \342\234\223 \"quoted\"[/INST] Oui</s>[INST] Et toi?\n[/INST]"},
    {"gemma-2-2b-it.jinja", "<bos>", "<eos>", kMultiTurn, true, std::nullopt},
    {"gemma-2-2b-it.jinja", "<bos>", "<eos>", kUnicode, false,
     "<bos><start_of_turn>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<end_of_turn>\n<start_of_turn>model\nOui<end_of_turn>\n<start_of_turn>user\nEt toi?<end_of_turn>\n"},
    {"gemma-3-it.jinja", "<bos>", "<eos>", kMultiTurn, true,
     "<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi "
     "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an "
     "assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"},
    {"gemma-3-it.jinja", "<bos>", "<eos>", kUnicode, false,
     "<bos><start_of_turn>user\n\303\207a va? \342\234\223 "
     "\"quoted\"<end_of_turn>\n<start_of_turn>model\nOui<end_of_turn>\n<start_of_turn>user\nEt toi?<end_of_turn>\n"},
    {"phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>", kMultiTurn, true,
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
     "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother "
     "question<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>", kUnicode, false,
     "<|user|>\n\303\207a va? \342\234\223 \"quoted\"<|end|>\n<|assistant|>\nOui<|end|>\n<|user|>\nEt "
     "toi?\n<|end|>\n<|endoftext|>"},
    {"phi-3-mini-4k-instruct-gguf-original.jinja", "<s>", "<|endoftext|>", kMultiTurn, true,
     "<s><|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am "
     "an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
    {"phi-3-mini-4k-instruct-gguf-original.jinja", "<s>", "<|endoftext|>", kUnicode, false,
     "<s><|user|>\n\303\207a va? \342\234\223 \"quoted\"<|end|>\n<|assistant|>\nOui<|end|>\n<|user|>\nEt "
     "toi?\n<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>", kMultiTurn, true,
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
     "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother "
     "question<|end|>\n<|assistant|>\n"},
    {"phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>", kUnicode, false,
     "<|user|>\n\303\207a va? \342\234\223 \"quoted\"<|end|>\n<|assistant|>\nOui<|end|>\n<|user|>\nEt "
     "toi?\n<|end|>\n<|endoftext|>"},
    {"deepseek-llm-7b-chat.jinja", "<\357\275\234begin\342\226\201of\342\226\201sentence\357\275\234>",
     "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", kMultiTurn, true,
     "<\357\275\234begin\342\226\201of\342\226\201sentence\357\275\234>You are a helpful assistant\n\nUser: "
     "Hello\n\nAssistant: Hi there<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>User: Who are "
     "you\n\nAssistant:    I am an assistant   <\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>User: "
     "Another question\n\nAssistant:"},
    {"deepseek-llm-7b-chat.jinja", "<\357\275\234begin\342\226\201of\342\226\201sentence\357\275\234>",
     "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", kUnicode, false,
     "<\357\275\234begin\342\226\201of\342\226\201sentence\357\275\234>User: \303\207a va? \342\234\223 "
     "\"quoted\"\n\nAssistant: Oui<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>User: Et toi?\n\n\n"},
};

}  // namespace

TEST_CASE("jinja: the real chat templates render as jinja2 renders them") {
  for (const RealRender& row : kRenders) {
    CAPTURE(row.file);
    CAPTURE(row.add_generation_prompt);
    const jinja::Template chat = jinja::Template::parse(read_file(data_dir() / "chat_templates" / row.file));
    const std::string variables =
        fmt::format(R"({{"messages": {}, "bos_token": {}, "eos_token": {}, "add_generation_prompt": {}}})",
                    row.messages, json_quote(row.bos), json_quote(row.eos), row.add_generation_prompt);
    if (row.expected) {
      CHECK(chat.render(variables, kRenderDate) == *row.expected);
    } else {
      CHECK_THROWS_AS(chat.render(variables, kRenderDate), jinja::TemplateError);
    }
  }
}
