// SamplingParams: how one request is decoded (greedy or sampled, truncation, stops,
// lengths, number of samples, structured output), with vLLM's defaults and one validation
// that names the field and its allowed range. The defaults here are the commands' defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/response_format.h"
#include "step/ids.h"

namespace pagedgen {

// Upper bound on `n`, the number of samples of one prompt (the OpenAI API's limit).
inline constexpr int32_t kMaxSamplesPerRequest = 128;

struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy (argmax, lowest id on ties); else logits / temperature
  int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
  double top_p = 1.0;        // keep the smallest most-likely set with mass >= top_p; 1 = off
  double min_p = 0.0;        // keep tokens with prob >= min_p * max prob; 0 = off
  std::optional<uint64_t> seed;  // per-request seed; absent -> derived from the run seed (rng.h)
  std::vector<std::string> stop;          // stop strings; the text ends before the first match
  std::vector<TokenId> stop_token_ids;    // extra ids that end generation (not in the text)
  int32_t max_tokens = 128;  // generated tokens per sample, at most (every command's default)
  int32_t min_tokens = 0;    // end-of-generation and stop ids are masked until this many exist
  bool ignore_eos = false;   // keep generating past end-of-generation ids (they stay in the tokens)
  int32_t n = 1;             // samples of this prompt
  // Structured outputs: the text must be this JSON. A constrained format ends the text
  // where the value ends, so min_tokens, ignore_eos, stop and stop_token_ids are refused
  // beside it (validate()).
  ResponseFormat response_format;

  bool is_greedy() const { return temperature == 0.0; }
};

// Throws Error naming the first invalid field, its allowed range and the value given,
// e.g. "temperature must be >= 0, got -1".
void validate(const SamplingParams& params);

}  // namespace pagedgen
