// Request fields of prompt scoring in both input formats: prompt_logprobs, echo (OpenAI
// completions only), prompts as token ids, max_tokens 0 (only when the prompt is scored or
// echoed), and every error naming the field.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <variant>

#include "io/openai_batch_format.h"
#include "io/request_parser.h"

using namespace pagedgen;

namespace {

// "R prompt=<text or ids> prompt_logprobs=<k> echo=<0|1> max_tokens=<n>" or "E <code>: <message>".
std::string describe_prompt_fields(const RequestItem& item) {
  const auto* r = std::get_if<Request>(&item);
  if (r == nullptr) {
    const RequestError& error = std::get<RequestError>(item);
    return fmt::format("E {}: {}", error.code, error.message);
  }
  const std::string prompt = r->prompt_token_ids() ? fmt::format("{}", *r->prompt_token_ids())
                                                   : (r->is_chat() ? std::string("chat") : r->prompt());
  const SamplingParams& p = r->sampling;
  return fmt::format("R prompt={} prompt_logprobs={} echo={} max_tokens={}", prompt,
                     p.prompt_logprobs ? fmt::format("{}", *p.prompt_logprobs) : "none", p.echo ? 1 : 0, p.max_tokens);
}

std::string prompt_plain(const std::string& fields) {
  return describe_prompt_fields(RequestParser(RequestFormat::kPlain, SamplingParams{}).parse("{" + fields + "}", 0));
}

// An OpenAI batch line to `url` whose body holds `fields` (and a conversation for chat).
std::string openai(std::string_view url, const std::string& fields) {
  const std::string messages = url == kChatCompletionsUrl ? R"("messages": [{"role": "user", "content": "c"}], )" : "";
  const std::string line =
      fmt::format(R"({{"custom_id": "r", "method": "POST", "url": "{}", "body": {{{}{}}}}})", url, messages, fields);
  return describe_prompt_fields(RequestParser(RequestFormat::kOpenAiBatch, SamplingParams{}).parse(line, 0));
}

std::string prompt_completion(const std::string& fields) { return openai(kCompletionsUrl, fields); }
std::string prompt_chat(const std::string& fields) { return openai(kChatCompletionsUrl, fields); }

}  // namespace

TEST_CASE("prompt_logprobs: a count in [0, 20] in both formats; max_tokens 0 scores only") {
  CHECK(prompt_plain(R"("prompt": "p", "prompt_logprobs": 5)") == "R prompt=p prompt_logprobs=5 echo=0 max_tokens=128");
  CHECK(prompt_completion(R"("prompt": "p", "prompt_logprobs": 0, "max_tokens": 0)") ==
        "R prompt=p prompt_logprobs=0 echo=0 max_tokens=0");
  CHECK(prompt_chat(R"("prompt_logprobs": 20, "max_tokens": 0)") == "R prompt=chat prompt_logprobs=20 echo=0 max_tokens=0");
  CHECK(prompt_plain(R"("prompt": "p", "prompt_logprobs": null)") == "R prompt=p prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_plain(R"("prompt": "p", "prompt_logprobs": 21)") ==
        "E invalid_value: prompt_logprobs must be in [0, 20] (the most likely alternatives reported per prompt "
        "token), got 21");
  CHECK(prompt_completion(R"("prompt": "p", "prompt_logprobs": true)") ==
        "E invalid_type: prompt_logprobs must be an integer, got a boolean");
  CHECK(prompt_plain(R"("prompt": "p", "prompt_logprobs": 1, "max_tokens": 0, "n": 2)") ==
        "E invalid_value: n must be 1 with max_tokens 0 (the prompt is scored once, nothing is sampled), got 2");
  CHECK(prompt_plain(R"("prompt": "p", "max_tokens": 0)") ==
        "E invalid_value: max_tokens must be >= 1 (0 only with echo or prompt_logprobs: score the prompt, generate "
        "nothing), got 0");
}

TEST_CASE("echo: OpenAI completions only") {
  CHECK(prompt_completion(R"("prompt": "p", "echo": true, "max_tokens": 0)") ==
        "R prompt=p prompt_logprobs=none echo=1 max_tokens=0");
  CHECK(prompt_completion(R"("prompt": "p", "echo": false)") == "R prompt=p prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_chat(R"("echo": true)") ==
        "E unsupported_field: body.echo is not supported for /v1/chat/completions (it applies to /v1/completions); "
        "remove it or give false");
  CHECK(prompt_chat(R"("echo": false)") == "R prompt=chat prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_plain(R"("prompt": "p", "echo": true)") ==
        "E unsupported_field: echo is an OpenAI completions field; plain lines give prompt_logprobs: k for the "
        "prompt's log probabilities (the text never repeats the prompt)");
  CHECK(prompt_plain(R"("prompt": "p", "echo": false)") == "R prompt=p prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_completion(R"("prompt": "p", "echo": 1)") == "E invalid_type: body.echo must be true or false, got a number");
}

TEST_CASE("prompts as token ids: non-empty lists of ids >= 0, one prompt per line") {
  CHECK(prompt_plain(R"("prompt": [1, 0, 49151])") == "R prompt=[1, 0, 49151] prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_completion(R"("prompt": [7])") == "R prompt=[7] prompt_logprobs=none echo=0 max_tokens=128");
  CHECK(prompt_plain(R"("prompt": [])") == "E invalid_value: prompt must be a non-empty string or list of token ids, got []");
  CHECK(prompt_plain(R"("prompt": [3, -1])") == "E invalid_value: prompt[1] must be a token id >= 0, got -1");
  CHECK(prompt_completion(R"("prompt": [1.5])") == "E invalid_type: body.prompt[0] must be an integer, got 1.5");
  CHECK(prompt_completion(R"("prompt": [[1, 2]])") ==
        "E invalid_type: body.prompt[0] must be a token id (one prompt per line: lists of prompts are not supported), "
        "got a list");
}
