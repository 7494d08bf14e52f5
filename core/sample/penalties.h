// Penalties and biases, the sampler's step 0 (sampler.h): which tokens of a row they
// change and by how much, from a sample's own tokens. The arithmetic per token is
// sampling::penalized_logit (sampling_math.h), shared with the device sampler; this file
// finds the tokens it applies to (host side for both) and applies it to a CPU row.
//
//   tokens  [ prompt ........ | generated (num_generated) ]
//            repetition_penalty: every distinct id of both parts
//            frequency/presence: the generated part, counted
//   logit_bias: its own ids, whether or not they occur
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sample/sampling_math.h"
#include "sample/sampling_params.h"
#include "step/ids.h"

namespace pagedgen {

// One token whose logit step 0 may change.
struct TokenPenalty {
  TokenId id = 0;
  double bias = 0.0;                // its logit_bias, 0 without one
  int32_t num_times_generated = 0;  // among the generated tokens
  bool in_sequence = false;         // in the prompt or the generated tokens
  bool operator==(const TokenPenalty&) const = default;
};

sampling::Penalties penalties_of(const SamplingParams& params);

// The tokens step 0 may change, sorted by id, each once: the distinct ids of `tokens` (the
// last num_generated of them generated) and the logit_bias ids; ids >= vocab_size are left
// out (a request's logit_bias ids are checked against the model before it runs). `out` is
// cleared first; `scratch` is reused.
void find_penalized_tokens(const SamplingParams& params, std::span<const TokenId> tokens, int32_t num_generated,
                           std::size_t vocab_size, std::vector<TokenPenalty>& out, std::vector<TokenId>& scratch);

// The row after step 0, in a buffer it keeps (valid until the next call).
class LogitPenalizer {
 public:
  // logits: [vocab] the model's row; tokens and num_generated as find_penalized_tokens.
  std::span<const float> apply(std::span<const float> logits, const SamplingParams& params,
                               std::span<const TokenId> tokens, int32_t num_generated);

 private:
  std::vector<float> row_;             // [vocab] the penalized row
  std::vector<TokenPenalty> changed_;  // find_penalized_tokens's output
  std::vector<TokenId> scratch_;
};

}  // namespace pagedgen
