#include "io/openai_batch_output.h"

#include <fmt/format.h>

#include <charconv>

#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

constexpr std::string_view kLineIdPrefix = "batch_req_";

void append_head(std::string& out, const std::optional<std::string>& custom_id_json, uint64_t index,
                 int status_code) {
  fmt::format_to(std::back_inserter(out), "{{\"id\":\"{}{}\",\"custom_id\":{}", kLineIdPrefix, index,
                 custom_id_json ? *custom_id_json : "null");
  fmt::format_to(std::back_inserter(out), ",\"response\":{{\"status_code\":{},\"request_id\":\"req_{}\",\"body\":",
                 status_code, index);
}

void append_output(std::string& out, const RequestOutput& output, const RecordContext& context) {
  PG_CHECK(!output.choices.empty(), "output of line {} has no choices", output.index);
  append_head(out, output.id_json, output.index, 200);
  fmt::format_to(std::back_inserter(out), "{{\"id\":\"{}-{}\",\"object\":\"{}\",\"created\":0,\"model\":",
                 context.chat ? "chatcmpl" : "cmpl", output.index, context.chat ? "chat.completion" : "text_completion");
  append_json_string(out, context.model);
  out += ",\"choices\":[";
  int64_t completion_tokens = 0;
  for (std::size_t i = 0; i < output.choices.size(); ++i) {
    const Completion& choice = output.choices[i];
    fmt::format_to(std::back_inserter(out), "{}{{\"index\":{},", i == 0 ? "" : ",", i);
    out += context.chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":";
    append_json_string(out, choice.text);
    if (context.chat) out += "}";
    fmt::format_to(std::back_inserter(out), ",\"logprobs\":null,\"finish_reason\":\"{}\"}}",
                   finish_reason_name(choice.finish_reason));
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
  if (const auto* output = std::get_if<RequestOutput>(&record)) append_output(out, *output, context);
  else append_error(out, std::get<RequestError>(record));
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
