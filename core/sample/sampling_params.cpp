#include "sample/sampling_params.h"

#include <cmath>

#include "util/error.h"

namespace pagedgen {

void validate(const SamplingParams& params) {
  // Negated comparisons so that NaN fails every range check.
  if (!(params.temperature >= 0.0) || std::isinf(params.temperature))
    fail("temperature must be >= 0 and finite, got {}", params.temperature);
  if (params.top_k < 0) fail("top_k must be >= 0 (0 = off), got {}", params.top_k);
  if (!(params.top_p > 0.0 && params.top_p <= 1.0))
    fail("top_p must be in (0, 1] (1 = off), got {}", params.top_p);
  if (!(params.min_p >= 0.0 && params.min_p <= 1.0))
    fail("min_p must be in [0, 1] (0 = off), got {}", params.min_p);
  if (params.max_tokens < 1) fail("max_tokens must be >= 1, got {}", params.max_tokens);
  if (params.min_tokens < 0) fail("min_tokens must be >= 0, got {}", params.min_tokens);
  if (params.min_tokens > params.max_tokens)
    fail("min_tokens must be <= max_tokens ({}), got {}", params.max_tokens, params.min_tokens);
  if (params.n < 1 || params.n > kMaxSamplesPerRequest)
    fail("n must be in [1, {}], got {}", kMaxSamplesPerRequest, params.n);
  for (std::size_t i = 0; i < params.stop.size(); ++i)
    if (params.stop[i].empty()) fail("stop[{}] must be a non-empty string, got \"\"", i);
  for (std::size_t i = 0; i < params.stop_token_ids.size(); ++i)
    if (params.stop_token_ids[i] < 0)
      fail("stop_token_ids[{}] must be a token id >= 0, got {}", i, params.stop_token_ids[i]);
}

}  // namespace pagedgen
