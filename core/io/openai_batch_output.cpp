#include "io/openai_batch_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "io/logprob_json.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

constexpr std::string_view kLineIdPrefix = "batch_req_";

void append_head(std::string& out, const std::optional<std::string>& custom_id_json, uint64_t index, int status_code) {
  fmt::format_to(std::back_inserter(out), "{{\"id\":\"{}{}\",\"custom_id\":{}", kLineIdPrefix, index,
                 custom_id_json ? *custom_id_json : "null");
  fmt::format_to(std::back_inserter(out),
                 ",\"response\":{{\"status_code\":{},\"request_id\":\"req_{}\",\"body\":", status_code, index);
}

// Chat: {"content":[{"token":"...","logprob":L,"bytes":[...],"top_logprobs":[{"token","logprob","bytes"},...]},...]}
void append_chat_logprobs(std::string& out, const std::vector<GeneratedTokenLogprobs>& entries) {
  const auto append_token = [&](const LogprobToken& t) {
    out += "\"token\":";
    append_json_string(out, t.bytes);
    out += ",\"logprob\":";
    append_logprob(out, t.logprob);
    out += ",\"bytes\":";
    append_byte_list(out, t.bytes);
  };
  out += "{\"content\":[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    out += i == 0 ? "{" : ",{";
    append_token(entries[i].token);
    out += ",\"top_logprobs\":[";
    for (std::size_t j = 0; j < entries[i].top.size(); ++j) {
      out += j == 0 ? "{" : ",{";
      append_token(entries[i].top[j]);
      out += "}";
    }
    out += "]}";
  }
  out += "]}";
}

// Completions: {"tokens":[...],"token_logprobs":[...],"top_logprobs":[{"text":L,...},...],
// "text_offset":[...]}. Each top_logprobs object holds the k most likely tokens and the
// generated one when it is not among them (up to k + 1, as OpenAI says); a token whose text
// repeats an earlier key of the object is left out (JSON keys are unique).
void append_completion_logprobs(std::string& out, const std::vector<GeneratedTokenLogprobs>& entries) {
  out += "{\"tokens\":[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, entries[i].token.bytes);
  }
  out += "],\"token_logprobs\":[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ',';
    append_logprob(out, entries[i].token.logprob);
  }
  out += "],\"top_logprobs\":[";
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    out += i == 0 ? "{" : ",{";
    keys.clear();
    const auto append_entry = [&](const LogprobToken& t) {
      std::string key = json_quote(t.bytes);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
      out += keys.empty() ? "" : ",";
      out += key;
      out += ':';
      append_logprob(out, t.logprob);
      keys.push_back(std::move(key));
    };
    bool has_token = false;
    for (const LogprobToken& t : entries[i].top) {
      append_entry(t);
      has_token |= t.id == entries[i].token.id;
    }
    if (!has_token) append_entry(entries[i].token);
    out += '}';
  }
  out += "],\"text_offset\":[";
  for (std::size_t i = 0; i < entries.size(); ++i)
    fmt::format_to(std::back_inserter(out), "{}{}", i == 0 ? "" : ",", entries[i].text_offset);
  out += "]}";
}

void append_output(std::string& out, const RequestOutput& output, const RecordContext& context) {
  PG_CHECK(!output.choices.empty(), "output of line {} has no choices", output.index);
  append_head(out, output.id_json, output.index, 200);
  fmt::format_to(std::back_inserter(out),
                 "{{\"id\":\"{}-{}\",\"object\":\"{}\",\"created\":0,\"model\":", context.chat ? "chatcmpl" : "cmpl",
                 output.index, context.chat ? "chat.completion" : "text_completion");
  append_json_string(out, context.model);
  out += ",\"choices\":[";
  int64_t completion_tokens = 0;
  for (std::size_t i = 0; i < output.choices.size(); ++i) {
    const Completion& choice = output.choices[i];
    fmt::format_to(std::back_inserter(out), "{}{{\"index\":{},", i == 0 ? "" : ",", i);
    out += context.chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":";
    append_json_string(out, choice.text);
    if (context.chat) out += "}";
    out += ",\"logprobs\":";
    if (!choice.logprobs)
      out += "null";
    else if (context.chat)
      append_chat_logprobs(out, *choice.logprobs);
    else
      append_completion_logprobs(out, *choice.logprobs);
    fmt::format_to(std::back_inserter(out), ",\"finish_reason\":\"{}\"}}", finish_reason_name(choice.finish_reason));
    completion_tokens += choice.num_tokens;
  }
  fmt::format_to(std::back_inserter(out),
                 "],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{},"
                 "\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}}}}},\"error\":null}}",
                 output.prompt_tokens, completion_tokens, output.prompt_tokens + completion_tokens,
                 output.cached_tokens);
}

void append_error(std::string& out, const RequestError& error) {
  append_head(out, error.id_json, error.index, 400);
  std::string code, message;
  append_json_string(code, error.code);
  append_json_string(message, error.message);
  fmt::format_to(std::back_inserter(out),
                 "{{\"error\":{{\"message\":{},\"type\":\"invalid_request_error\",\"param\":null,\"code\":{}}}}}}},"
                 "\"error\":{{\"code\":{},\"message\":{}}}}}",
                 message, code, code, message);
}

}  // namespace

std::string format_openai_batch_line(const OutputRecord& record, const RecordContext& context) {
  std::string out;
  if (const auto* output = std::get_if<RequestOutput>(&record))
    append_output(out, *output, context);
  else
    append_error(out, std::get<RequestError>(record));
  return out;
}

std::optional<uint64_t> openai_batch_line_index(std::string_view id) {
  if (!id.starts_with(kLineIdPrefix)) return std::nullopt;
  id.remove_prefix(kLineIdPrefix.size());
  uint64_t index = 0;
  const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), index);
  if (error != std::errc{} || end != id.data() + id.size() || id.empty()) return std::nullopt;
  return index;
}

}  // namespace pagedgen
