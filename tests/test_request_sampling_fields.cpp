// Request fields of penalties, biases, log probabilities and vLLM's text and token fields
// (include_stop_str_in_output, skip_special_tokens, bad_words, ...) in both input formats (their
// values and every error, naming the field), and nothing silently ignored: every key of
// io/refused_fields.cpp's list is unsupported_field with a non-neutral value and passes
// with its neutral one, in both formats; metadata keys pass.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <variant>
#include <vector>

#include "io/request_parser.h"

using namespace pagedgen;

namespace {

// "R <params>" or "E <code>: <message>".
std::string parse_sampling(RequestFormat format, const std::string& line) {
  RequestParser parser(format, SamplingParams{});
  const RequestItem item = parser.parse(line, 0);
  if (const auto* error = std::get_if<RequestError>(&item)) return fmt::format("E {}: {}", error->code, error->message);
  const SamplingParams& p = std::get<Request>(item).sampling;
  std::string bias;
  for (const LogitBias& b : p.logit_bias) bias += fmt::format("{}:{},", b.id, b.bias);
  return fmt::format("R presence={} frequency={} repetition={} bias=[{}] logprobs={}", p.presence_penalty,
                     p.frequency_penalty, p.repetition_penalty, bias,
                     p.logprobs ? fmt::format("{}", *p.logprobs) : "none");
}

std::string sampling_plain(const std::string& fields) {
  return parse_sampling(RequestFormat::kPlain, "{\"prompt\": \"p\", " + fields + "}");
}

std::string sampling_chat(const std::string& fields) {
  return parse_sampling(RequestFormat::kOpenAiBatch,
                        R"({"custom_id": "r", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": )"
                        R"([{"role": "user", "content": "c"}], )" +
                            fields + "}}");
}

std::string sampling_completion(const std::string& fields) {
  return parse_sampling(
      RequestFormat::kOpenAiBatch,
      R"({"custom_id": "r", "method": "POST", "url": "/v1/completions", "body": {"prompt": "p", )" + fields + "}}");
}

constexpr const char* kNone = "R presence=0 frequency=0 repetition=1 bias=[] logprobs=none";

// vLLM's text and token fields of a plain line: "R <fields>" or "E <code>: <message>".
std::string text_fields(const std::string& fields) {
  RequestParser parser(RequestFormat::kPlain, SamplingParams{});
  const RequestItem item = parser.parse("{\"prompt\": \"p\", " + fields + "}", 0);
  if (const auto* error = std::get_if<RequestError>(&item)) return fmt::format("E {}: {}", error->code, error->message);
  const SamplingParams& p = std::get<Request>(item).sampling;
  return fmt::format("R include_stop={} skip_special={} spaces={} bad_words=[{}] allowed=[{}] truncate={}",
                     p.include_stop_str_in_output, p.skip_special_tokens, p.spaces_between_special_tokens,
                     fmt::join(p.bad_words, "|"), fmt::join(p.allowed_token_ids, ","),
                     p.truncate_prompt_tokens ? fmt::format("{}", *p.truncate_prompt_tokens) : "none");
}

}  // namespace

TEST_CASE("vLLM's text and token fields: values, defaults for null, and every error naming the field") {
  CHECK(text_fields(R"("max_tokens": 3)") ==
        "R include_stop=false skip_special=true spaces=true bad_words=[] allowed=[] truncate=none");
  CHECK(text_fields(R"("include_stop_str_in_output": true, "skip_special_tokens": false, )"
                    R"("spaces_between_special_tokens": false, "bad_words": ["a b", " c"], )"
                    R"("allowed_token_ids": [5, 2, 5], "truncate_prompt_tokens": 7)") ==
        "R include_stop=true skip_special=false spaces=false bad_words=[a b| c] allowed=[5,2,5] truncate=7");
  CHECK(text_fields(R"("include_stop_str_in_output": null, "skip_special_tokens": null, )"
                    R"("spaces_between_special_tokens": null, "bad_words": null, "allowed_token_ids": null, )"
                    R"("truncate_prompt_tokens": null)") ==
        "R include_stop=false skip_special=true spaces=true bad_words=[] allowed=[] truncate=none");
  CHECK(text_fields(R"("truncate_prompt_tokens": -1, "bad_words": [])") ==
        "R include_stop=false skip_special=true spaces=true bad_words=[] allowed=[] truncate=-1");
  CHECK(text_fields(R"("allowed_token_ids": [])") ==
        "E invalid_value: allowed_token_ids must list at least one token id (null: every token may be picked)");
  CHECK(text_fields(R"("allowed_token_ids": [3, -1])") ==
        "E invalid_value: allowed_token_ids[1] must be a token id >= 0, got -1");
  CHECK(text_fields(R"("truncate_prompt_tokens": 0)") ==
        "E invalid_value: truncate_prompt_tokens must be >= 1 (the prompt tokens kept, from the end) or -1 (as many "
        "as the context holds), got 0");
  CHECK(text_fields(R"("truncate_prompt_tokens": -2)").starts_with("E invalid_value: truncate_prompt_tokens must"));
  CHECK(text_fields(R"("skip_special_tokens": "no")").starts_with("E invalid_type: skip_special_tokens must be"));
  CHECK(text_fields(R"("bad_words": "x")").starts_with("E invalid_type: bad_words must be a list of strings"));
  std::string many = "\"w\"";
  for (int i = 0; i < 128; ++i) many += ", \"w\"";
  CHECK(text_fields(R"("bad_words": [)" + many + "]") ==
        "E invalid_value: bad_words must list at most 128 words, got 129");
  // The same keys in an OpenAI body.
  CHECK(sampling_chat(R"("skip_special_tokens": false, "bad_words": ["x"], "allowed_token_ids": [1], )"
             R"("truncate_prompt_tokens": 4, "include_stop_str_in_output": true)") == kNone);
}

TEST_CASE("penalties and logit_bias: values in both formats, sorted by id") {
  const std::string fields =
      R"("presence_penalty": 0.5, "frequency_penalty": -1.5, "repetition_penalty": 1.2, "logit_bias": {"50256": -100, "7": 2.5, "0": 100})";
  const std::string expected =
      "R presence=0.5 frequency=-1.5 repetition=1.2 bias=[0:100,7:2.5,50256:-100,] logprobs=none";
  CHECK(sampling_plain(fields) == expected);
  CHECK(sampling_chat(fields) == expected);
  CHECK(sampling_completion(fields) == expected);
  // Null and neutral values keep the defaults.
  CHECK(sampling_plain(R"("presence_penalty": null, "frequency_penalty": 0, "repetition_penalty": 1, "logit_bias": {})") ==
        kNone);
}

TEST_CASE("penalties and logit_bias: each error names the field and the range") {
  CHECK(sampling_plain(R"("presence_penalty": 2.5)") ==
        "E invalid_value: presence_penalty must be in [-2, 2] (0 = off), got 2.5");
  CHECK(sampling_plain(R"("frequency_penalty": -3)") ==
        "E invalid_value: frequency_penalty must be in [-2, 2] (0 = off), got -3");
  CHECK(sampling_plain(R"("frequency_penalty": "1")") == "E invalid_type: frequency_penalty must be a number, got a string");
  CHECK(sampling_chat(R"("repetition_penalty": 0)") ==
        "E invalid_value: repetition_penalty must be in [0.01, 100] (1 = off), got 0");
  CHECK(sampling_chat(R"("repetition_penalty": 101)") ==
        "E invalid_value: repetition_penalty must be in [0.01, 100] (1 = off), got 101");
  CHECK(sampling_plain(R"("logit_bias": [1, 2])") ==
        "E invalid_type: logit_bias must be an object mapping token ids to biases, got a list");
  CHECK(sampling_plain(R"("logit_bias": {"the": 1})") ==
        "E invalid_value: logit_bias keys must be token ids in decimal, e.g. \"50256\"; got \"the\"");
  CHECK(sampling_plain(R"("logit_bias": {"-1": 1})") ==
        "E invalid_value: logit_bias keys must be token ids in decimal, e.g. \"50256\"; got \"-1\"");
  CHECK(sampling_plain(R"("logit_bias": {"07": 1})") ==
        "E invalid_value: logit_bias keys must be token ids in decimal, e.g. \"50256\"; got \"07\"");
  CHECK(sampling_plain(R"("logit_bias": {"99999999999": 1})") ==
        "E invalid_value: logit_bias keys must be token ids in decimal, e.g. \"50256\"; got \"99999999999\"");
  CHECK(sampling_completion(R"("logit_bias": {"5": 100.5})") ==
        "E invalid_value: logit_bias[\"5\"] must be in [-100, 100], got 100.5");
  CHECK(sampling_completion(R"("logit_bias": {"5": "ban"})") ==
        "E invalid_type: logit_bias[\"5\"] must be a number, got a string");
  CHECK(sampling_plain(R"("logit_bias": {"5": 1, "5": 2})") == "E duplicate_field: field \"5\" appears twice in logit_bias");
}

TEST_CASE("logprobs: true/false with top_logprobs in chat, a count in completions and the plain format") {
  CHECK(sampling_chat(R"("logprobs": true, "top_logprobs": 5)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=5");
  CHECK(sampling_chat(R"("logprobs": true)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=0");
  CHECK(sampling_chat(R"("top_logprobs": 4, "logprobs": true)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=4");
  CHECK(sampling_chat(R"("logprobs": false, "top_logprobs": 0)") == kNone);
  CHECK(sampling_chat(R"("logprobs": null, "top_logprobs": null)") == kNone);
  CHECK(sampling_chat(R"("top_logprobs": 3)") == "E invalid_value: body.top_logprobs needs body.logprobs: true");
  CHECK(sampling_chat(R"("logprobs": 3)") ==
        "E invalid_type: body.logprobs must be true or false for /v1/chat/completions (give top_logprobs: k for the k "
        "most likely alternatives), got 3");
  CHECK(sampling_chat(R"("logprobs": true, "top_logprobs": 21)") ==
        "E invalid_value: logprobs must be in [0, 20] (the most likely alternatives reported per token), got 21");
  CHECK(sampling_chat(R"("logprobs": true, "top_logprobs": 1.5)") ==
        "E invalid_type: body.top_logprobs must be an integer, got 1.5");

  CHECK(sampling_completion(R"("logprobs": 5)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=5");
  CHECK(sampling_completion(R"("logprobs": 0)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=0");
  CHECK(sampling_completion(R"("logprobs": 20)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=20");
  CHECK(sampling_completion(R"("logprobs": true)") ==
        "E invalid_type: body.logprobs must be an integer in [0, 20] for /v1/completions (the number of alternatives "
        "per token), got true");
  CHECK(
      sampling_completion(R"("logprobs": 2, "top_logprobs": 2)") ==
      "E conflicting_fields: body.top_logprobs is for /v1/chat/completions; a /v1/completions body gives logprobs: k");

  CHECK(sampling_plain(R"("logprobs": 3)") == "R presence=0 frequency=0 repetition=1 bias=[] logprobs=3");
  CHECK(sampling_plain(R"("logprobs": null)") == kNone);
  CHECK(sampling_plain(R"("logprobs": -1)") ==
        "E invalid_value: logprobs must be in [0, 20] (the most likely alternatives reported per token), got -1");
  CHECK(sampling_plain(R"("logprobs": true)") ==
        "E invalid_type: logprobs must be an integer in [0, 20] (the number of alternatives reported per token), got a "
        "boolean");
  CHECK(sampling_plain(R"("top_logprobs": 3)") ==
        "E unsupported_field: top_logprobs is an OpenAI body field; the plain format gives logprobs: k");
  CHECK(sampling_plain(R"("max_completion_tokens": 3)") ==
        "E unsupported_field: max_completion_tokens is an OpenAI body field; the plain format gives max_tokens");
}

TEST_CASE("nothing silently ignored: every refused key is unsupported_field in both formats, unless neutral") {
  // (key, a value that asks for something, its neutral value)
  const struct {
    const char* key;
    const char* value;
    const char* neutral;
  } kRefused[] = {
      {"stream", "true", "false"},
      {"stream_options", R"({"include_usage": true})", "null"},
      {"suffix", R"("end")", R"("")"},
      {"best_of", "3", "1"},
      {"tool_choice", R"("required")", R"("auto")"},
      {"parallel_tool_calls", "false", "true"},
      {"functions", R"([{"name": "f"}])", "[]"},
      {"function_call", R"({"name": "f"})", R"("auto")"},
      {"modalities", R"(["text", "audio"])", R"(["text"])"},
      {"audio", R"({"voice": "alloy", "format": "wav"})", "null"},
      {"prediction", R"({"type": "content", "content": "x"})", "null"},
      {"web_search_options", R"({"search_context_size": "low"})", "{}"},
      {"reasoning_effort", R"("high")", "null"},
      {"verbosity", R"("low")", "null"},
      {"use_beam_search", "true", "false"},
      {"length_penalty", "0.5", "1"},
      {"logits_processors", R"(["p"])", "null"},
      {"chat_template", R"("{{ x }}")", "null"},
  };
  for (const auto& field : kRefused) {
    CAPTURE(std::string(field.key));
    const std::string asking = fmt::format("\"{}\": {}", field.key, field.value);
    const std::string neutral = fmt::format("\"{}\": {}", field.key, field.neutral);
    const std::string prefix = fmt::format("E unsupported_field: body.{} is not supported by pagedgen (", field.key);
    CHECK(sampling_chat(asking).starts_with(prefix));
    CHECK(sampling_completion(asking).starts_with(prefix));
    CHECK(sampling_plain(asking).starts_with(fmt::format("E unsupported_field: {} is not supported by pagedgen (", field.key)));
    CHECK(sampling_chat(neutral) == kNone);
    CHECK(sampling_completion(neutral) == kNone);
    CHECK(sampling_plain(neutral) == kNone);
  }
  CHECK(sampling_chat(R"("tool_choice": {"type": "function", "function": {"name": "f"}})") ==
        "E unsupported_field: body.tool_choice is not supported by pagedgen (tools are passed to the chat template, "
        "but a tool call cannot be forced and is not parsed from the output); remove it or give its default");
  // Keys that only describe the request pass, and so do unknown keys.
  const std::string metadata =
      R"("model": "m", "metadata": {"k": "v"}, "user": "u", "store": true, "service_tier": "flex", )"
      R"("safety_identifier": "s", "prompt_cache_key": "c", "request_id": "x", "priority": 1, "my_tag": [1])";
  CHECK(sampling_chat(metadata) == kNone);
  CHECK(sampling_completion(metadata) == kNone);
  CHECK(sampling_plain(metadata) == kNone);
}
