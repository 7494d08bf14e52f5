#include "io/plain_output.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

void append_head(std::string& out, const std::optional<std::string>& id_json, uint64_t index) {
  out += "{\"id\":";
  out += id_json ? *id_json : "null";
  fmt::format_to(std::back_inserter(out), ",\"index\":{}", index);
}

void append_output(std::string& out, const RequestOutput& output) {
  PG_CHECK(!output.choices.empty(), "output of line {} has no choices", output.index);
  append_head(out, output.id_json, output.index);
  int64_t completion_tokens = 0;
  if (output.choices.size() == 1) {
    const Completion& only = output.choices.front();
    out += ",\"text\":";
    append_json_string(out, only.text);
    fmt::format_to(std::back_inserter(out), ",\"finish_reason\":\"{}\"", finish_reason_name(only.finish_reason));
    completion_tokens = only.num_tokens;
  } else {
    out += ",\"choices\":[";
    for (std::size_t i = 0; i < output.choices.size(); ++i) {
      const Completion& choice = output.choices[i];
      fmt::format_to(std::back_inserter(out), "{}{{\"index\":{},\"text\":", i == 0 ? "" : ",", i);
      append_json_string(out, choice.text);
      fmt::format_to(std::back_inserter(out), ",\"finish_reason\":\"{}\"}}", finish_reason_name(choice.finish_reason));
      completion_tokens += choice.num_tokens;
    }
    out += "]";
  }
  fmt::format_to(std::back_inserter(out),
                 ",\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{},\"cached_tokens\":{}}}}}",
                 output.prompt_tokens, completion_tokens, output.cached_tokens);
}

void append_error(std::string& out, const RequestError& error) {
  append_head(out, error.id_json, error.index);
  out += ",\"error\":{\"code\":";
  append_json_string(out, error.code);
  out += ",\"message\":";
  append_json_string(out, error.message);
  out += "}}";
}

}  // namespace

std::string format_plain_line(const OutputRecord& record, const RecordContext& /*context*/) {
  std::string out;
  if (const auto* output = std::get_if<RequestOutput>(&record)) append_output(out, *output);
  else append_error(out, std::get<RequestError>(record));
  return out;
}

}  // namespace pagedgen
