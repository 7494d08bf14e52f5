#include "io/sampling_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "io/json_line_errors.h"
#include "io/json_validation.h"
#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

// {"<token id>": bias, ...}: keys are token ids written in decimal without a sign or
// leading zeros, so each id has one spelling and none can be given twice. Sorted by id;
// the values' range is SamplingParams' (validate()).
std::vector<LogitBias> read_logit_bias(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, "an object mapping token ids to biases", type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  std::vector<LogitBias> biases;
  for (auto field : object) {
    std::string_view key;
    od::value bias;
    if (field.unescaped_key().get(key) || field.value().get(bias))
      throw_line_error(request_error::kInvalidJson, "bad object");
    const bool canonical = !key.empty() && key.size() <= 10 &&
                           key.find_first_not_of("0123456789") == std::string_view::npos &&
                           (key == "0" || key.front() != '0');
    const int64_t id = canonical ? std::stoll(std::string(key)) : -1;
    if (!canonical || id > INT32_MAX)
      throw_line_error(request_error::kInvalidValue,
                       fmt::format("{} keys must be token ids in decimal, e.g. \"50256\"; got \"{}\"", path, key));
    biases.push_back({static_cast<TokenId>(id), read_number(bias, fmt::format("{}[\"{}\"]", path, key))});
  }
  std::sort(biases.begin(), biases.end(), [](const LogitBias& a, const LogitBias& b) { return a.id < b.id; });
  return biases;
}

// vLLM's text and token fields: the detokenizer's switches, the token restrictions and the
// prompt truncation (their meaning: sample/sampling_params.h).
constexpr std::array<std::string_view, 6> kTextAndTokenFields = {
    "include_stop_str_in_output", "skip_special_tokens",   "spaces_between_special_tokens", "bad_words",
    "allowed_token_ids",          "truncate_prompt_tokens"};

bool is_text_and_token_field(std::string_view key) {
  return std::find(kTextAndTokenFields.begin(), kTextAndTokenFields.end(), key) != kTextAndTokenFields.end();
}

// One of kTextAndTokenFields, not null.
void read_text_and_token_field(std::string_view key, od::value value, SamplingParams& params) {
  if (key == "include_stop_str_in_output") {
    params.include_stop_str_in_output = read_bool(value, key);
  } else if (key == "skip_special_tokens") {
    params.skip_special_tokens = read_bool(value, key);
  } else if (key == "spaces_between_special_tokens") {
    params.spaces_between_special_tokens = read_bool(value, key);
  } else if (key == "bad_words") {
    params.bad_words = read_list(value, key, "a list of strings", read_string);
  } else if (key == "allowed_token_ids") {
    params.allowed_token_ids = read_list(value, key, "a list of token ids", read_int32);
    // vLLM refuses an empty list rather than read it as "no token" or "every token".
    if (params.allowed_token_ids.empty())
      throw_line_error(request_error::kInvalidValue,
                       "allowed_token_ids must list at least one token id (null: every token may be picked)");
  } else if (key == "truncate_prompt_tokens") {
    params.truncate_prompt_tokens = read_int32(value, key);
  }
}

}  // namespace

bool read_sampling_field(std::string_view key, od::value value, SamplingParams& params) {
  const bool is_sampling_field = key == "temperature" || key == "top_p" || key == "top_k" || key == "min_p" ||
                                 key == "seed" || key == "stop" || key == "stop_token_ids" || key == "max_tokens" ||
                                 key == "min_tokens" || key == "ignore_eos" || key == "n" ||
                                 key == "presence_penalty" || key == "frequency_penalty" ||
                                 key == "repetition_penalty" || key == "logit_bias" || key == "prompt_logprobs";
  if (!is_sampling_field && !is_text_and_token_field(key)) return false;
  if (type_of(value) == od::json_type::null) return true;  // null keeps the default
  if (!is_sampling_field) {
    read_text_and_token_field(key, value, params);
    return true;
  }
  if (key == "temperature") {
    params.temperature = read_number(value, key);
  } else if (key == "top_p") {
    params.top_p = read_number(value, key);
  } else if (key == "top_k") {
    const int32_t top_k = read_int32(value, key);
    params.top_k = top_k == -1 ? 0 : top_k;  // vLLM's "off"
  } else if (key == "min_p") {
    params.min_p = read_number(value, key);
  } else if (key == "seed") {
    params.seed = read_uint64(value, key);
  } else if (key == "stop") {
    if (type_of(value) == od::json_type::string)
      params.stop = {read_string(value, key)};
    else
      params.stop = read_list(value, key, "a string or a list of strings", read_string);
  } else if (key == "stop_token_ids") {
    params.stop_token_ids = read_list(value, key, "a list of token ids", read_int32);
  } else if (key == "max_tokens") {
    params.max_tokens = read_int32(value, key);
  } else if (key == "min_tokens") {
    params.min_tokens = read_int32(value, key);
  } else if (key == "ignore_eos") {
    params.ignore_eos = read_bool(value, key);
  } else if (key == "n") {
    params.n = read_int32(value, key);
  } else if (key == "presence_penalty") {
    params.presence_penalty = read_number(value, key);
  } else if (key == "frequency_penalty") {
    params.frequency_penalty = read_number(value, key);
  } else if (key == "repetition_penalty") {
    params.repetition_penalty = read_number(value, key);
  } else if (key == "logit_bias") {
    params.logit_bias = read_logit_bias(value, key);
  } else if (key == "prompt_logprobs") {
    params.prompt_logprobs = read_int32(value, key);
  }
  return true;
}

}  // namespace pagedgen::json_fields
