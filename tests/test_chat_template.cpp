// Chat templates around the interpreter: the built-in templates are the real texts of their
// families, the variables a template sees are transformers' (messages and tools as the line
// gives them, kwargs after the special tokens), and continue_final_message cuts the text as
// transformers does. What real templates render is tests/test_chat_template_oracle.cpp's.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/builtin_chat_templates.h"
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

constexpr std::chrono::year_month_day kDate = std::chrono::year(2025) / 3 / 9;

ChatTemplate make_template(std::string_view source, ChatTemplateKwargs defaults = {}) {
  return ChatTemplate(jinja::Template::parse(source), "<s>", "</s>", kDate, std::move(defaults));
}

ChatRequest conversation(std::string messages_json) {
  ChatRequest request;
  request.messages_json = std::move(messages_json);
  return request;
}

}  // namespace

TEST_CASE("the built-in templates are the real texts of their families") {
  const std::pair<const char*, const char*> kFiles[] = {
      {"chatml", "openhermes-2.5-mistral-7b.jinja"},
      {"llama2", "llama-2-13b-chat.jinja"},
      {"llama3", "meta-llama-3-8b-instruct.jinja"},
      {"mistral", "mistral-7b-instruct-v0.2.jinja"},
      {"gemma", "gemma-3-it.jinja"},
      {"phi3", "phi-3-mini-4k-instruct.jinja"},
  };
  CHECK(builtin_chat_template_names() ==
        std::vector<std::string_view>{"chatml", "llama2", "llama3", "mistral", "gemma", "phi3"});
  for (const auto& [name, file] : kFiles) {
    CAPTURE(name);
    REQUIRE(builtin_chat_template(name));
    CHECK(*builtin_chat_template(name) == read_template(file));
  }
  CHECK_FALSE(builtin_chat_template("chatml2"));
  CHECK_FALSE(builtin_chat_template(""));
}

TEST_CASE("the template sees transformers' variables: the line's JSON as given, kwargs last, lines override") {
  const ChatTemplate chat = make_template("x", {{"enable_thinking", "true"}, {"custom", "\"a\""}});
  ChatRequest request = conversation(R"([{"role": "user", "content": null, "tool_calls": [{"id": "c"}]}])");
  CHECK(chat.variables_json(request) ==
        R"({"messages": [{"role": "user", "content": null, "tool_calls": [{"id": "c"}]}], "tools": null, )"
        R"("documents": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", )"
        R"("enable_thinking": true, "custom": "a"})");
  request.tools_json = R"([{"type": "function"}])";
  request.documents_json = R"([{"text": "d"}])";
  request.add_generation_prompt = false;
  request.kwargs = {{"enable_thinking", "false"}};
  CHECK(chat.variables_json(request) ==
        R"({"messages": [{"role": "user", "content": null, "tool_calls": [{"id": "c"}]}], )"
        R"("tools": [{"type": "function"}], "documents": [{"text": "d"}], "add_generation_prompt": false, )"
        R"("bos_token": "<s>", "eos_token": "</s>", "custom": "a", "enable_thinking": false})");
  CHECK(is_reserved_chat_variable("messages"));
  CHECK(is_reserved_chat_variable("bos_token"));
  CHECK_FALSE(is_reserved_chat_variable("enable_thinking"));
}

TEST_CASE("a one-message conversation quotes its text as JSON") {
  CHECK(user_message_request("say \"hi\"\n").messages_json == R"([{"role": "user", "content": "say \"hi\"\n"}])");
}

TEST_CASE("continue_final_message cuts after the final message's text, as transformers does") {
  // The template kept the text whole: cut right after it.
  CHECK(cut_after_final_message("<u>Hi</u><a>The answer is</a>", "The answer is") == "<u>Hi</u><a>The answer is");
  // The template trimmed a trailing space: cut after the trimmed text, not into the end tag.
  CHECK(cut_after_final_message("<a>Sure:</a>", "Sure: ") == "<a>Sure:");
  // Kept whole with its space: the space stays.
  CHECK(cut_after_final_message("<a>Sure: </a>", "Sure: ") == "<a>Sure: ");
  // Python's strip() takes Unicode spaces too (NBSP, U+3000).
  CHECK(cut_after_final_message("<a>Oui</a>", "\u00a0Oui\u3000") == "<a>Oui");
  // The last occurrence counts.
  CHECK(cut_after_final_message("<u>ok</u><a>ok</a>", "ok") == "<u>ok</u><a>ok");
  // Nothing to find: the whole text (Python finds "" at its end).
  CHECK(cut_after_final_message("<a></a>", "") == "<a></a>");
  CHECK(cut_after_final_message("<a></a>", "  ") == "<a></a>");
  CHECK_THROWS_AS(cut_after_final_message("<a>something else</a>", "The answer"), Error);
}

TEST_CASE("render: the template's text, cut for continue_final_message, kwargs visible to the template") {
  const ChatTemplate chat = make_template(
      "{% for m in messages %}[{{ m.role }}]{{ m.content }}[/]{% endfor %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}"
      "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}",
      {{"enable_thinking", "false"}});
  ChatRequest request = conversation(R"([{"role": "user", "content": "Hi"}])");
  CHECK(chat.render(request) == "[user]Hi[/][assistant]<think></think>");
  request.kwargs = {{"enable_thinking", "true"}};
  CHECK(chat.render(request) == "[user]Hi[/][assistant]");
  ChatRequest continued =
      conversation(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yes,"}])");
  continued.add_generation_prompt = false;
  continued.continued_text = "Yes,";
  CHECK(chat.render(continued) == "[user]Hi[/][assistant]Yes,");
}

TEST_CASE("render: raise_exception is a TemplateError naming the template's line") {
  const ChatTemplate chat = make_template("ok\n{{ raise_exception('roles must alternate') }}");
  try {
    (void)chat.render(conversation(R"([{"role": "user", "content": "Hi"}])"));
    FAIL("no error");
  } catch (const jinja::TemplateError& error) {
    CHECK(error.line() == 2);
    CHECK(std::string(error.what()).find("roles must alternate") != std::string::npos);
  }
}

TEST_CASE("the default model's GGUF template is SmolLM2's, as stored in tests/data") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const GgufFile gguf(*model);
  const auto text = gguf.get_string("tokenizer.chat_template");
  REQUIRE(text);
  CHECK(*text == read_template("smollm2-135m-instruct.jinja"));
}
