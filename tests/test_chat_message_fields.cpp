// The chat fields of a request line (io/chat_message_fields.h) as the reader makes them into a
// ChatRequest: messages, tools and documents passed through as written, kwargs, the two
// flags and continue_final_message's text, and the combinations refused; and
// --chat-template-kwargs (io/chat_template_kwargs.h).
#include <doctest/doctest.h>

#include "io/chat_template_kwargs.h"
#include "io/request_parser.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

RequestItem parse(RequestFormat format, const std::string& line) {
  RequestParser parser(format, SamplingParams{});
  return parser.parse(line, 0);
}

ChatRequest chat_of(const std::string& line) {
  const RequestItem item = parse(RequestFormat::kPlain, line);
  if (const auto* error = std::get_if<RequestError>(&item)) FAIL(error->code << ": " << error->message);
  REQUIRE(std::get<Request>(item).is_chat());
  return std::get<Request>(item).chat();
}

std::string parse_error_of(RequestFormat format, const std::string& line) {
  const RequestItem item = parse(format, line);
  REQUIRE(std::holds_alternative<RequestError>(item));
  const RequestError& error = std::get<RequestError>(item);
  return error.code + ": " + error.message;
}

}  // namespace

TEST_CASE("messages, tools and documents reach the template as the line writes them") {
  const ChatRequest chat = chat_of(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}], "name": "bo"},)"
      R"( {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]},)"
      R"( {"role": "tool", "tool_call_id": "c1", "content": "22 C"}, {"tool_calls": [], "role": "assistant"}],)"
      R"( "tools": [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2.0}}}],)"
      R"( "documents": [{"title": "t", "text": "x"}]})");
  CHECK(chat.messages_json ==
        R"([{"role": "user", "content": [{"type": "text", "text": "Hi"}], "name": "bo"},)"
        R"( {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]},)"
        R"( {"role": "tool", "tool_call_id": "c1", "content": "22 C"}, {"tool_calls": [], "role": "assistant"}])");
  CHECK(chat.tools_json == R"([{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2.0}}}])");
  CHECK(chat.documents_json == R"([{"title": "t", "text": "x"}])");
  CHECK(chat.add_generation_prompt);
  CHECK_FALSE(chat.continued_text);
  CHECK(chat.kwargs.empty());
}

TEST_CASE("chat_template_kwargs keep their order and JSON values; reserved names are refused") {
  const ChatRequest chat = chat_of(
      R"({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": false, "x": [1, {"y": null}], "s": "t"}})");
  CHECK(chat.kwargs == ChatTemplateKwargs{{"enable_thinking", "false"}, {"x", R"([1, {"y": null}])"}, {"s", R"("t")"}});
  CHECK(parse_error_of(RequestFormat::kPlain,
                       R"({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"tools": []}})") ==
        "invalid_value: chat_template_kwargs.tools: \"tools\" is a variable pagedgen sets itself; give it as its own "
        "field");
  CHECK(parse_error_of(RequestFormat::kPlain,
                       R"({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": [1]})") ==
        "invalid_type: chat_template_kwargs must be an object of template variables, got a list");
}

TEST_CASE("continue_final_message keeps the final message's text and turns the generation prompt off") {
  ChatRequest chat = chat_of(
      R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure: "}], "continue_final_message": true})");
  CHECK_FALSE(chat.add_generation_prompt);
  CHECK(chat.continued_text == "Sure: ");
  // A list of parts: its last text part.
  chat =
      chat_of(R"({"messages": [{"role": "assistant", "content": [{"type": "text", "text": "A"},)"
              R"( {"type": "text", "text": "B"}]}], "continue_final_message": true, "add_generation_prompt": false})");
  CHECK(chat.continued_text == "B");
  CHECK(parse_error_of(RequestFormat::kPlain,
                       R"({"messages": [{"role": "user", "content": "Hi"}], "continue_final_message": true,)"
                       R"( "add_generation_prompt": true})") ==
        "conflicting_fields: continue_final_message and add_generation_prompt: true ask for two different ends of "
        "the prompt; give one");
  CHECK(
      parse_error_of(
          RequestFormat::kPlain,
          R"({"messages": [{"role": "assistant", "content": null, "tool_calls": []}], "continue_final_message": true})") ==
      "invalid_value: continue_final_message needs a final message with text to continue");
  // add_generation_prompt alone.
  CHECK_FALSE(chat_of(R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})")
                  .add_generation_prompt);
}

TEST_CASE("chat fields on a prompt line are refused, add_generation_prompt aside; bodies name body.") {
  CHECK(parse_error_of(RequestFormat::kPlain, R"({"prompt": "p", "tools": [{"type": "function"}]})") ==
        "conflicting_fields: tools is for a chat template and applies to messages; this line gives a prompt");
  CHECK(std::holds_alternative<Request>(
      parse(RequestFormat::kPlain, R"({"prompt": "p", "add_generation_prompt": true})")));
  CHECK(parse_error_of(RequestFormat::kOpenAiBatch,
                       R"({"custom_id": "r", "method": "POST", "url": "/v1/completions", "body": {"prompt": "p",)"
                       R"( "chat_template_kwargs": {"a": 1}}})") ==
        "conflicting_fields: body.chat_template_kwargs is for a chat template and applies to messages; this line "
        "gives a prompt");
  CHECK(parse_error_of(RequestFormat::kOpenAiBatch,
                       R"({"custom_id": "r", "method": "POST", "url": "/v1/chat/completions", "body": {"messages":)"
                       R"( [{"role": "user", "content": "Hi"}], "tools": {"a": 1}}})") ==
        "invalid_type: body.tools must be a list of tools, got an object");
}

TEST_CASE("fields the reader does not check pass whatever they hold, numbers of any size included") {
  CHECK(chat_of(R"({"messages": [{"role": "user", "content": "Hi", "n": 123456789012345678901234567890}]})")
            .messages_json ==
        R"([{"role": "user", "content": "Hi", "n": 123456789012345678901234567890}])");
}

TEST_CASE("a message's content may be left out only beside tool_calls") {
  CHECK(parse_error_of(RequestFormat::kPlain, R"({"messages": [{"role": "assistant"}]})") ==
        "missing_field: messages[0].content is missing");
  CHECK(chat_of(R"({"messages": [{"role": "assistant", "tool_calls": []}]})").messages_json ==
        R"([{"role": "assistant", "tool_calls": []}])");
  CHECK(parse_error_of(RequestFormat::kPlain, R"({"messages": []})") ==
        "invalid_value: messages must hold at least one message");
}

TEST_CASE("--chat-template-kwargs: one JSON object, formatted back compactly in order") {
  const ChatTemplateKwargs kwargs = parse_chat_template_kwargs(R"( {"enable_thinking": false, "n": [1,2]} )");
  CHECK(kwargs == ChatTemplateKwargs{{"enable_thinking", "false"}, {"n", "[1,2]"}});
  CHECK(format_chat_template_kwargs(kwargs) == R"({"enable_thinking": false, "n": [1,2]})");
  CHECK_THROWS_AS(parse_chat_template_kwargs("[1]"), Error);
  CHECK_THROWS_AS(parse_chat_template_kwargs(R"({"a": 1} {"b": 2})"), Error);
  CHECK_THROWS_AS(parse_chat_template_kwargs(R"({"messages": []})"), Error);
  CHECK_THROWS_AS(parse_chat_template_kwargs("not json"), Error);
}
