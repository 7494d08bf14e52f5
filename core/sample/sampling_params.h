// SamplingParams: how one request is decoded (greedy or sampled, truncation, stops,
// lengths, number of samples, structured output, penalties and biases, log probabilities),
// with vLLM's defaults and one validation that names the field and its allowed range. The
// defaults here are the commands' defaults.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/response_format.h"
#include "step/ids.h"

namespace pagedgen {

// Upper bound on `n`, the number of samples of one prompt (the OpenAI API's limit).
inline constexpr int32_t kMaxSamplesPerRequest = 128;
// Upper bound on the alternatives reported per generated token (OpenAI's top_logprobs limit).
inline constexpr int32_t kMaxTopLogprobs = 20;
// logit_bias values lie in [-kMaxLogitBias, kMaxLogitBias] (the OpenAI API's range).
inline constexpr double kMaxLogitBias = 100.0;
// bad_words holds at most this many words (each is tokenized twice, and checked at every step).
inline constexpr std::size_t kMaxBadWords = 128;
// presence_penalty and frequency_penalty lie in [-kMaxPenalty, kMaxPenalty] (OpenAI's).
inline constexpr double kMaxPenalty = 2.0;
// repetition_penalty lies in [1 / kMaxRepetitionPenalty, kMaxRepetitionPenalty]: far past
// any useful value, and small enough that a finite logit stays finite.
inline constexpr double kMaxRepetitionPenalty = 100.0;

// One logit_bias entry: `bias` is added to token `id`'s logit.
struct LogitBias {
  TokenId id = 0;
  double bias = 0.0;
  bool operator==(const LogitBias&) const = default;
};

struct SamplingParams {
  double temperature = 1.0;             // 0 = greedy (argmax, lowest id on ties); else logits / temperature
  int32_t top_k = 0;                    // keep the k most likely tokens; 0 = off
  double top_p = 1.0;                   // keep the smallest most-likely set with mass >= top_p; 1 = off
  double min_p = 0.0;                   // keep tokens with prob >= min_p * max prob; 0 = off
  std::optional<uint64_t> seed;         // per-request seed; absent -> derived from the run seed (rng.h)
  std::vector<std::string> stop;        // stop strings; the text ends before the first match
  std::vector<TokenId> stop_token_ids;  // extra ids that end generation (not in the text)
  int32_t max_tokens = 128;             // generated tokens per sample, at most (every command's default)
  int32_t min_tokens = 0;               // end-of-generation and stop ids are masked until this many exist
  bool ignore_eos = false;              // keep generating past end-of-generation ids (they stay in the tokens)
  int32_t n = 1;                        // samples of this prompt
  // Structured outputs: the text must be this JSON. A constrained format ends the text
  // where the value ends, so min_tokens, ignore_eos, stop and stop_token_ids are refused
  // beside it (validate()).
  ResponseFormat response_format;
  // Penalties and biases (sampler.h, step 0), on the logits before everything else:
  // logit_bias first, then repetition_penalty over the prompt and generated tokens, then
  // frequency and presence penalties over the generated tokens (vLLM's order).
  double presence_penalty = 0.0;      // minus this for a token generated at least once
  double frequency_penalty = 0.0;     // minus this times the number of times it was generated
  double repetition_penalty = 1.0;    // 1 = off; a token of the prompt or generated: logit > 0 -> logit / it, else * it
  std::vector<LogitBias> logit_bias;  // sorted by id, ids unique
  // Report each generated token's log probability and this many most likely alternatives
  // (sample/token_logprobs.h); absent: no log probabilities.
  std::optional<int32_t> logprobs;
  // Text (vLLM's detokenizer, output_processor.h): keep a matched stop string at the end of
  // the text, and the text of the stop or end-of-generation token that ended it (none
  // unless skip_special_tokens is false, for a control token).
  bool include_stop_str_in_output = false;
  // Control tokens (<|im_end|>, <s>, ...) give no text; false: their text is kept.
  bool skip_special_tokens = true;
  // vLLM's detokenizer with a fast tokenizer only removes a space its decoder put between
  // two special tokens; pagedgen's decoders never put one, so both values give one text.
  bool spaces_between_special_tokens = true;
  // Token restrictions, masks of the sampler's step 1 (sampler.h):
  std::vector<TokenId> allowed_token_ids;  // non-empty: only these ids may be picked
  std::vector<std::string> bad_words;      // words the text never gets (bad_words.h)
  // bad_words tokenized by the model's tokenizer (job/prompt_builder.h fills it): each
  // sequence's last token may not follow the others.
  std::vector<std::vector<TokenId>> bad_words_ids;
  // Keep only the last k prompt tokens (after the chat template); -1: the most the context
  // holds with one generated token (max_model_len - 1). Absent: the whole prompt.
  std::optional<int32_t> truncate_prompt_tokens;
  // vLLM's prompt_logprobs: each prompt token's log probability given the tokens before it,
  // and this many most likely alternatives (the first token has none); absent: none.
  std::optional<int32_t> prompt_logprobs;
  // OpenAI completions' echo: the output text (and, with logprobs, its log probabilities)
  // starts with the prompt's. Kept here because it changes what the engine computes.
  bool echo = false;

  // Temperature 0, or top_k 1: only the best token can be drawn (at a huge temperature
  // every weight would round to the same value, and the cut would keep the lowest id).
  bool is_greedy() const { return temperature == 0.0 || top_k == 1; }
  // The alternatives to compute per prompt token: prompt_logprobs', and logprobs' when the
  // prompt is echoed with log probabilities; nullopt: the prompt is not scored.
  std::optional<int32_t> prompt_scoring_top() const {
    const std::optional<int32_t> echoed = echo ? logprobs : std::nullopt;
    if (!prompt_logprobs) return echoed;
    return std::max(*prompt_logprobs, echoed.value_or(0));
  }
  // max_tokens 0 is allowed only when the prompt itself is the output (scoring).
  bool scores_only() const { return max_tokens == 0; }
  // Whether step 0 changes any logit (a penalty or a bias is given).
  bool has_penalties() const { return penalizes_tokens() || !logit_bias.empty(); }
  // Whether step 0 reads the sequence's tokens (the penalties; logit_bias does not).
  bool penalizes_tokens() const {
    return presence_penalty != 0.0 || frequency_penalty != 0.0 || repetition_penalty != 1.0;
  }
  // Whether step 1 reads the generated tokens: a bad word of two or more tokens.
  bool bans_after_tokens() const {
    for (const std::vector<TokenId>& ids : bad_words_ids)
      if (ids.size() > 1) return true;
    return false;
  }
};

// Throws Error naming the first invalid field, its allowed range and the value given,
// e.g. "temperature must be >= 0, got -1".
void validate(const SamplingParams& params);

}  // namespace pagedgen
