#include "io/openai_batch_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <span>
#include <vector>

#include "io/logprob_json.h"
#include "tokenizer/utf8.h"
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
// repeats an earlier key of the object is left out (JSON keys are unique). With echo the
// prompt's entries come first, the first token's logprob and top_logprobs null, and the
// generated tokens' offsets count the prompt's `prompt_chars` characters before them.
void append_completion_logprobs(std::string& out, std::span<const GeneratedTokenLogprobs> prompt,
                                std::span<const GeneratedTokenLogprobs> generated, int64_t prompt_chars) {
  const std::size_t num_entries = prompt.size() + generated.size();
  const auto entry = [&](std::size_t i) -> const GeneratedTokenLogprobs& {
    return i < prompt.size() ? prompt[i] : generated[i - prompt.size()];
  };
  const auto append_list = [&](std::string_view key, const auto& append_item) {
    fmt::format_to(std::back_inserter(out), "{}\"{}\":[", key == "tokens" ? "" : "],", key);
    for (std::size_t i = 0; i < num_entries; ++i) {
      if (i > 0) out += ',';
      if (i == 0 && !prompt.empty() && key != "tokens" && key != "text_offset")
        out += "null";  // nothing precedes the prompt's first token
      else
        append_item(entry(i), i < prompt.size() ? 0 : prompt_chars);
    }
  };
  out += '{';
  append_list("tokens", [&](const GeneratedTokenLogprobs& e, int64_t) { append_json_string(out, e.token.bytes); });
  append_list("token_logprobs",
              [&](const GeneratedTokenLogprobs& e, int64_t) { append_logprob(out, e.token.logprob); });
  std::vector<std::string> keys;
  append_list("top_logprobs", [&](const GeneratedTokenLogprobs& e, int64_t) {
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
    out += '{';
    bool has_token = false;
    for (const LogprobToken& t : e.top) {
      append_entry(t);
      has_token |= t.id == e.token.id;
    }
    if (!has_token) append_entry(e.token);
    out += '}';
  });
  append_list("text_offset", [&](const GeneratedTokenLogprobs& e, int64_t shift) {
    fmt::format_to(std::back_inserter(out), "{}", e.text_offset + shift);
  });
  out += "]}";
}

// vLLM's prompt_logprobs: [null, {"<id>":{"logprob":L,"rank":R,"decoded_token":"..."},...}, ...],
// per token a map holding the prompt token first, then the top k (the token once: with a
// top entry's rank, 1..k, when it is one).
void append_prompt_logprobs(std::string& out, const std::vector<GeneratedTokenLogprobs>& entries) {
  const auto append_token = [&](bool first, const LogprobToken& t, int32_t rank) {
    fmt::format_to(std::back_inserter(out), "{}\"{}\":{{\"logprob\":", first ? "" : ",", t.id);
    append_logprob(out, t.logprob);
    fmt::format_to(std::back_inserter(out), ",\"rank\":{},\"decoded_token\":", rank);
    append_json_string(out, t.bytes);
    out += '}';
  };
  out += "[null";
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const GeneratedTokenLogprobs& e = entries[i];
    const auto in_top =
        std::find_if(e.top.begin(), e.top.end(), [&](const LogprobToken& t) { return t.id == e.token.id; });
    out += ",{";
    append_token(true, e.token, in_top != e.top.end() ? static_cast<int32_t>(in_top - e.top.begin()) + 1 : e.rank);
    for (std::size_t j = 0; j < e.top.size(); ++j)
      if (e.top[j].id != e.token.id) append_token(false, e.top[j], static_cast<int32_t>(j) + 1);
    out += '}';
  }
  out += ']';
}

// A choice's text and logprobs fields, the prompt's first with echo (completions only).
void append_choice_body(std::string& out, const RequestOutput& output, const Completion& choice, bool chat) {
  out += chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":";
  append_json_string(out, output.echo_text.value_or("") + choice.text);
  if (chat) out += "}";
  out += ",\"logprobs\":";
  if (!choice.logprobs) {
    out += "null";
  } else if (chat) {
    append_chat_logprobs(out, *choice.logprobs);
  } else {
    const std::span<const GeneratedTokenLogprobs> prompt =
        output.echo_logprobs ? std::span(*output.echo_logprobs) : std::span<const GeneratedTokenLogprobs>();
    append_completion_logprobs(out, prompt, *choice.logprobs, utf8_num_code_points(output.echo_text.value_or("")));
  }
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
    append_choice_body(out, output, choice, context.chat);
    fmt::format_to(std::back_inserter(out), ",\"finish_reason\":\"{}\"", finish_reason_name(choice.finish_reason));
    if (!context.chat && output.prompt_logprobs) {  // vLLM: in the choice for completions
      out += ",\"prompt_logprobs\":";
      append_prompt_logprobs(out, *output.prompt_logprobs);
    }
    out += '}';
    completion_tokens += choice.num_tokens;
  }
  fmt::format_to(std::back_inserter(out),
                 "],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{},"
                 "\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}",
                 output.prompt_tokens, completion_tokens, output.prompt_tokens + completion_tokens,
                 output.cached_tokens);
  if (context.chat && output.prompt_logprobs) {  // vLLM: at the response level for chat
    out += ",\"prompt_logprobs\":";
    append_prompt_logprobs(out, *output.prompt_logprobs);
  }
  out += "}},\"error\":null}";
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
