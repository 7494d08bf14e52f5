#include "io/plain_output.h"

#include <fmt/format.h>

#include "io/logprob_json.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

void append_head(std::string& out, const std::optional<std::string>& id_json, uint64_t index) {
  out += "{\"id\":";
  out += id_json ? *id_json : "null";
  fmt::format_to(std::back_inserter(out), ",\"index\":{}", index);
}

// {"token":"...","id":N,"logprob":L,"top_logprobs":[{"token","id","logprob"},...]}
void append_entry(std::string& out, const GeneratedTokenLogprobs& entry) {
  const auto append_token = [&](const LogprobToken& t) {
    out += "\"token\":";
    append_json_string(out, t.bytes);
    fmt::format_to(std::back_inserter(out), ",\"id\":{},\"logprob\":", t.id);
    append_logprob(out, t.logprob);
  };
  out += '{';
  append_token(entry.token);
  out += ",\"top_logprobs\":[";
  for (std::size_t j = 0; j < entry.top.size(); ++j) {
    out += j == 0 ? "{" : ",{";
    append_token(entry.top[j]);
    out += '}';
  }
  out += "]}";
}

// ,"logprobs":[entry,...] when the request asked for them.
void append_logprobs(std::string& out, const Completion& choice) {
  if (!choice.logprobs) return;
  out += ",\"logprobs\":[";
  for (std::size_t i = 0; i < choice.logprobs->size(); ++i) {
    if (i > 0) out += ',';
    append_entry(out, (*choice.logprobs)[i]);
  }
  out += ']';
}

// ,"prompt_logprobs":[null,entry,...] when the request asked: null for the first token,
// which nothing precedes.
void append_prompt_logprobs(std::string& out, const RequestOutput& output) {
  if (!output.prompt_logprobs) return;
  out += ",\"prompt_logprobs\":[null";
  for (std::size_t i = 1; i < output.prompt_logprobs->size(); ++i) {
    out += ',';
    append_entry(out, (*output.prompt_logprobs)[i]);
  }
  out += ']';
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
    append_logprobs(out, only);
    completion_tokens = only.num_tokens;
  } else {
    out += ",\"choices\":[";
    for (std::size_t i = 0; i < output.choices.size(); ++i) {
      const Completion& choice = output.choices[i];
      fmt::format_to(std::back_inserter(out), "{}{{\"index\":{},\"text\":", i == 0 ? "" : ",", i);
      append_json_string(out, choice.text);
      fmt::format_to(std::back_inserter(out), ",\"finish_reason\":\"{}\"", finish_reason_name(choice.finish_reason));
      append_logprobs(out, choice);
      out += '}';
      completion_tokens += choice.num_tokens;
    }
    out += "]";
  }
  append_prompt_logprobs(out, output);
  fmt::format_to(std::back_inserter(out),
                 ",\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{},\"cached_tokens\":{}}}}}",
                 output.prompt_tokens, completion_tokens, output.cached_tokens);
}

void append_plain_error(std::string& out, const RequestError& error) {
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
  if (const auto* output = std::get_if<RequestOutput>(&record))
    append_output(out, *output);
  else
    append_plain_error(out, std::get<RequestError>(record));
  return out;
}

}  // namespace pagedgen
