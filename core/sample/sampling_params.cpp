#include "sample/sampling_params.h"

#include <cmath>

#include "util/error.h"

namespace pagedgen {

namespace {

// A constrained response format ends the text where the value is complete; each of these
// would either hold it open past that point or cut it short.
void validate_structured_output(const SamplingParams& params) {
  if (!params.response_format.is_constrained()) return;
  const std::string_view format = response_format_type_name(params.response_format.type);
  if (params.min_tokens != 0)
    fail("min_tokens must be 0 with response_format {} (the value may be complete sooner), got {}", format,
         params.min_tokens);
  if (params.ignore_eos)
    fail("ignore_eos cannot be true with response_format {}: the text ends where the value does", format);
  if (!params.stop.empty())
    fail(
        "stop cannot be given with response_format {}: a stop string would cut the value short; remove one of "
        "them",
        format);
  if (!params.stop_token_ids.empty())
    fail(
        "stop_token_ids cannot be given with response_format {}: a stop token would cut the value short; remove "
        "one of them",
        format);
}

// The token restrictions and prompt truncation (vLLM's ranges); the ids' upper bound is
// the model's vocabulary, checked when the prompt is built (job/prompt_builder.h).
void validate_token_fields(const SamplingParams& params) {
  for (std::size_t i = 0; i < params.allowed_token_ids.size(); ++i)
    if (params.allowed_token_ids[i] < 0)
      fail("allowed_token_ids[{}] must be a token id >= 0, got {}", i, params.allowed_token_ids[i]);
  if (params.bad_words.size() > kMaxBadWords)
    fail("bad_words must list at most {} words, got {}", kMaxBadWords, params.bad_words.size());
  if (params.truncate_prompt_tokens && *params.truncate_prompt_tokens < 1 && *params.truncate_prompt_tokens != -1)
    fail(
        "truncate_prompt_tokens must be >= 1 (the prompt tokens kept, from the end) or -1 (as many as the context "
        "holds), got {}",
        *params.truncate_prompt_tokens);
}

}  // namespace

void validate(const SamplingParams& params) {
  // Negated comparisons so that NaN fails every range check.
  if (!(params.temperature >= 0.0) || std::isinf(params.temperature))
    fail("temperature must be >= 0 and finite, got {}", params.temperature);
  if (params.top_k < 0) fail("top_k must be >= 0 (0 = off), got {}", params.top_k);
  if (!(params.top_p > 0.0 && params.top_p <= 1.0)) fail("top_p must be in (0, 1] (1 = off), got {}", params.top_p);
  if (!(params.min_p >= 0.0 && params.min_p <= 1.0)) fail("min_p must be in [0, 1] (0 = off), got {}", params.min_p);
  if (params.max_tokens < 0 || (params.max_tokens == 0 && !params.echo && !params.prompt_logprobs))
    fail("max_tokens must be >= 1 (0 only with echo or prompt_logprobs: score the prompt, generate nothing), got {}",
         params.max_tokens);
  if (params.min_tokens < 0) fail("min_tokens must be >= 0, got {}", params.min_tokens);
  if (params.min_tokens > params.max_tokens)
    fail("min_tokens must be <= max_tokens ({}), got {}", params.max_tokens, params.min_tokens);
  if (params.n < 1 || params.n > kMaxSamplesPerRequest)
    fail("n must be in [1, {}], got {}", kMaxSamplesPerRequest, params.n);
  if (params.scores_only() && params.n != 1)
    fail("n must be 1 with max_tokens 0 (the prompt is scored once, nothing is sampled), got {}", params.n);
  for (std::size_t i = 0; i < params.stop.size(); ++i)
    if (params.stop[i].empty()) fail("stop[{}] must be a non-empty string, got \"\"", i);
  for (std::size_t i = 0; i < params.stop_token_ids.size(); ++i)
    if (params.stop_token_ids[i] < 0)
      fail("stop_token_ids[{}] must be a token id >= 0, got {}", i, params.stop_token_ids[i]);
  if (!(params.presence_penalty >= -kMaxPenalty && params.presence_penalty <= kMaxPenalty))
    fail("presence_penalty must be in [-{}, {}] (0 = off), got {}", kMaxPenalty, kMaxPenalty, params.presence_penalty);
  if (!(params.frequency_penalty >= -kMaxPenalty && params.frequency_penalty <= kMaxPenalty))
    fail("frequency_penalty must be in [-{}, {}] (0 = off), got {}", kMaxPenalty, kMaxPenalty,
         params.frequency_penalty);
  if (!(params.repetition_penalty >= 1.0 / kMaxRepetitionPenalty && params.repetition_penalty <= kMaxRepetitionPenalty))
    fail("repetition_penalty must be in [{}, {}] (1 = off), got {}", 1.0 / kMaxRepetitionPenalty, kMaxRepetitionPenalty,
         params.repetition_penalty);
  for (std::size_t i = 0; i < params.logit_bias.size(); ++i) {
    const LogitBias& entry = params.logit_bias[i];
    if (entry.id < 0) fail("logit_bias keys must be token ids >= 0, got {}", entry.id);
    if (i > 0 && !(params.logit_bias[i - 1].id < entry.id))
      fail("logit_bias must list each token id once, in increasing order; got {} after {}", entry.id,
           params.logit_bias[i - 1].id);
    if (!(entry.bias >= -kMaxLogitBias && entry.bias <= kMaxLogitBias))
      fail("logit_bias[\"{}\"] must be in [-{}, {}], got {}", entry.id, kMaxLogitBias, kMaxLogitBias, entry.bias);
  }
  if (params.logprobs && (*params.logprobs < 0 || *params.logprobs > kMaxTopLogprobs))
    fail("logprobs must be in [0, {}] (the most likely alternatives reported per token), got {}", kMaxTopLogprobs,
         *params.logprobs);
  validate_token_fields(params);
  if (params.prompt_logprobs && (*params.prompt_logprobs < 0 || *params.prompt_logprobs > kMaxTopLogprobs))
    fail("prompt_logprobs must be in [0, {}] (the most likely alternatives reported per prompt token), got {}",
         kMaxTopLogprobs, *params.prompt_logprobs);
  validate_structured_output(params);
}

}  // namespace pagedgen
