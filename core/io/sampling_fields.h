// The sampling fields of a request line, shared by the input formats. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string_view>

#include "sample/sampling_params.h"

namespace pagedgen::json_fields {

// Applies one top-level sampling field to `params` (null keeps the default). Returns false
// when `key` names no sampling field. Fields: temperature, top_p, top_k (-1 = off, as in
// vLLM), min_p, seed, stop (string or list), stop_token_ids, max_tokens, min_tokens,
// ignore_eos, n, presence_penalty, frequency_penalty, repetition_penalty, logit_bias
// ({"<token id>": bias}), and vLLM's include_stop_str_in_output, skip_special_tokens,
// spaces_between_special_tokens, bad_words, allowed_token_ids (a non-empty list) and
// truncate_prompt_tokens. logprobs is each format's own (its type differs).
bool read_sampling_field(std::string_view key, simdjson::ondemand::value value, SamplingParams& params);

}  // namespace pagedgen::json_fields
