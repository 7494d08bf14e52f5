// `pagedgen generate` on OpenAI batch files end to end: the request lines of the OpenAI
// batch documentation (chat and completions, small max_tokens) plus bad lines run, and
// every output line is checked field by field, errors included.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

// The documented examples (max_tokens made small), more sampling fields, and bad lines.
const char* kBatchInput =
    R"({"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-3.5-turbo-0125", "messages": [{"role": "system", "content": "You are a helpful assistant."},{"role": "user", "content": "Hello world!"}],"max_tokens": 6}})"
    "\n"
    R"({"custom_id": "request-2", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-3.5-turbo-0125", "messages": [{"role": "system", "content": "You are an unhelpful assistant."},{"role": "user", "content": "Hello world!"}],"max_tokens": 6}})"
    "\n"
    R"({"custom_id": "request-3", "method": "POST", "url": "/v1/completions", "body": {"model": "gpt-3.5-turbo-instruct", "prompt": "Say this is a test", "max_tokens": 7, "temperature": 0}})"
    "\n"
    "\n"
    R"({"custom_id": "request-4", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Name a color."}], "max_completion_tokens": 5, "temperature": 0.7, "top_p": 0.9, "n": 2, "seed": 7}})"
    "\n"
    R"({"custom_id": "bad-url", "method": "POST", "url": "/v1/embeddings", "body": {"input": "x"}})"
    "\n"
    R"({"id": "plain", "prompt": "a line of the plain format"})"
    "\n"
    R"({"custom_id": "request-5", "method": "POST", "url": "/v1/completions", "body": {"prompt": "Hi", "stream": true}})"
    "\n"
    R"({"custom_id": "broken", "method": )"
    "\n";

struct Expected {
  uint64_t index;
  std::string custom_id;   // "" for null
  std::string error_code;  // "" for a success
  bool chat = false;
  std::string model = {};
  int64_t max_tokens = 0;
  int64_t n = 1;
};

using Keys = std::vector<std::string_view>;

std::string_view string_of(simdjson::dom::element e) {
  std::string_view s;
  REQUIRE(e.get(s) == simdjson::SUCCESS);
  return s;
}

int64_t int_of(simdjson::dom::element e) {
  int64_t v = 0;
  REQUIRE(e.get(v) == simdjson::SUCCESS);
  return v;
}

Keys keys_of(simdjson::dom::object object) {
  Keys keys;
  for (auto field : object) keys.push_back(field.key);
  return keys;
}

void check_error_line(simdjson::dom::object line, const Expected& e) {
  simdjson::dom::object response = line["response"];
  CHECK(int_of(response["status_code"]) == 400);
  simdjson::dom::object body = response["body"];
  CHECK(keys_of(body) == Keys{"error"});
  simdjson::dom::object body_error = body["error"];
  CHECK(keys_of(body_error) == Keys{"message", "type", "param", "code"});
  CHECK(string_of(body_error["type"]) == "invalid_request_error");
  CHECK(body_error["param"].is_null());
  CHECK(string_of(body_error["code"]) == e.error_code);
  simdjson::dom::object error = line["error"];
  CHECK(keys_of(error) == Keys{"code", "message"});
  CHECK(string_of(error["code"]) == e.error_code);
  CHECK(string_of(error["message"]) == string_of(body_error["message"]));
  CHECK_FALSE(string_of(error["message"]).empty());
}

void check_success_line(simdjson::dom::object line, const Expected& e) {
  simdjson::dom::object response = line["response"];
  CHECK(int_of(response["status_code"]) == 200);
  CHECK(line["error"].is_null());
  simdjson::dom::object body = response["body"];
  CHECK(keys_of(body) == Keys{"id", "object", "created", "model", "choices", "usage"});
  CHECK(string_of(body["id"]) == fmt::format("{}-{}", e.chat ? "chatcmpl" : "cmpl", e.index));
  CHECK(string_of(body["object"]) == (e.chat ? "chat.completion" : "text_completion"));
  CHECK(int_of(body["created"]) == 0);
  CHECK(string_of(body["model"]) == e.model);
  simdjson::dom::array choices = body["choices"];
  REQUIRE(static_cast<int64_t>(choices.size()) == e.n);
  int64_t i = 0;
  for (simdjson::dom::object choice : choices) {
    CHECK(int_of(choice["index"]) == i++);
    if (e.chat) {
      CHECK(keys_of(choice) == Keys{"index", "message", "logprobs", "finish_reason"});
      simdjson::dom::object message = choice["message"];
      CHECK(keys_of(message) == Keys{"role", "content"});
      CHECK(string_of(message["role"]) == "assistant");
      string_of(message["content"]);  // a string
    } else {
      CHECK(keys_of(choice) == Keys{"index", "text", "logprobs", "finish_reason"});
      string_of(choice["text"]);
    }
    CHECK(choice["logprobs"].is_null());
    const std::string_view reason = string_of(choice["finish_reason"]);
    CHECK((reason == "stop" || reason == "length"));
  }
  simdjson::dom::object usage = body["usage"];
  CHECK(keys_of(usage) == Keys{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"});
  const int64_t prompt = int_of(usage["prompt_tokens"]);
  const int64_t completion = int_of(usage["completion_tokens"]);
  CHECK(prompt > 0);
  CHECK(completion > 0);
  CHECK(completion <= e.max_tokens * e.n);
  CHECK(int_of(usage["total_tokens"]) == prompt + completion);
  CHECK(keys_of(usage["prompt_tokens_details"]) == Keys{"cached_tokens"});
  const int64_t cached = int_of(usage["prompt_tokens_details"]["cached_tokens"]);
  CHECK((cached >= 0 && cached < prompt));
}

void check_line(simdjson::dom::object line, const Expected& e) {
  CAPTURE(e.index);
  CHECK(keys_of(line) == Keys{"id", "custom_id", "response", "error"});
  CHECK(string_of(line["id"]) == fmt::format("batch_req_{}", e.index));
  if (e.custom_id.empty())
    CHECK(line["custom_id"].is_null());
  else
    CHECK(string_of(line["custom_id"]) == e.custom_id);
  simdjson::dom::object response = line["response"];
  CHECK(keys_of(response) == Keys{"status_code", "request_id", "body"});
  CHECK(string_of(response["request_id"]) == fmt::format("req_{}", e.index));
  if (e.error_code.empty())
    check_success_line(line, e);
  else
    check_error_line(line, e);
}

}  // namespace

TEST_CASE("OpenAI batch documentation examples: every output line checked field by field") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-openai-batch");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << kBatchInput;
  const auto out = dir / "out.jsonl";
  const CliResult r =
      run_pagedgen(fmt::format("generate -q -i '{}' -o '{}'", input.string(), out.string()), dir / "stderr.txt");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);  // finished, some lines failed
  const std::string text = read_file(out);
  MESSAGE("output:\n" << text);
  const std::vector<Expected> expected = {
      {0, "request-1", "", true, "gpt-3.5-turbo-0125", 6},
      {1, "request-2", "", true, "gpt-3.5-turbo-0125", 6},
      {2, "request-3", "", false, "gpt-3.5-turbo-instruct", 7},
      {4, "request-4", "", true, "gpt-4o-mini", 5, 2},
      {5, "bad-url", "invalid_value"},
      {6, "", "wrong_format"},
      {7, "request-5", "unsupported_field"},
      {8, "", "invalid_json"},
  };
  simdjson::dom::parser parser;
  std::size_t num_lines = 0;
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1, ++num_lines) {
    REQUIRE(num_lines < expected.size());
    simdjson::dom::object line;
    REQUIRE(parser.parse(text.substr(begin, end - begin)).get(line) == simdjson::SUCCESS);
    check_line(line, expected[num_lines]);
  }
  CHECK(num_lines == expected.size());
  CHECK(begin == text.size());

  // Forced to the plain format, every OpenAI line is an error line of the plain format.
  const auto plain_out = dir / "plain.jsonl";
  const CliResult forced = run_pagedgen(
      fmt::format("generate -q --format plain -i '{}' -o '{}' --max-tokens 3", input.string(), plain_out.string()),
      dir / "stderr.txt");
  CHECK(forced.exit_code == 1);
  const std::string plain_text = read_file(plain_out);
  CHECK(plain_text.find("{\"id\":null,\"index\":0,\"error\":{\"code\":\"wrong_format\"") == 0);
  CHECK(plain_text.find("{\"id\":\"plain\",\"index\":6,\"text\":") != std::string::npos);
}
