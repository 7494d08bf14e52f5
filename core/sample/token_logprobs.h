// Log probabilities of a generated token (OpenAI's logprobs): the model's log-softmax over
// its logits row, before any sampling transform (penalties, logit_bias, masks,
// temperature, top-k/top-p/min-p), as vLLM reports them by default, so they describe the
// model and not the decoding settings. The sampled token's value and the k most likely
// tokens (highest logit first, lower id first on ties), k <= kMaxTopLogprobs.
//
// Fixed-order arithmetic (sampling_math.h): max over the row; sum of e^(logit - max) in
// double, chunks of kLogSumChunk ids in id order, then the chunk sums in order, with
// portable_exp; logprob = (logit - max) - ln(sum), rounded to float once. A device that
// follows the same order gets the same sum bit for bit; its log agrees within 1 ulp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0.0f;  // <= 0; -inf for a token whose logit is -inf
  bool operator==(const TokenLogprob&) const = default;
};

struct TokenLogprobs {
  float logprob = 0.0f;           // the sampled (or scored prompt) token's
  std::vector<TokenLogprob> top;  // [num_top] most likely first
  // The token's rank as vLLM counts it: the ids whose logit is >= its own (itself
  // included), so 1 for the most likely token and ties count against it.
  int32_t rank = 1;
  bool operator==(const TokenLogprobs&) const = default;
};

// logits: [vocab] a usable row (no NaN or +inf, some finite value), the one `token` was
// sampled from; 0 <= num_top (at most the vocabulary is returned).
TokenLogprobs token_logprobs(std::span<const float> logits, TokenId token, int32_t num_top);

// Whether token_logprobs() may read the row: no NaN or +inf, and some finite logit. A prompt
// row that is not gives no log probabilities (the model failed on that input).
bool is_usable_logprobs_row(std::span<const float> logits);

}  // namespace pagedgen
