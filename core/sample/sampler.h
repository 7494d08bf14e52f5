// Sampler: picks a sample's next token from its logits row. Greedy is argmax (lowest id
// wins ties); otherwise temperature, then top-k, top-p and min-p over the tokens sorted by
// probability, then one uniform draw. Bit-for-bit deterministic for the same inputs.
//
// Exact procedure for temperature > 0 (all sums are sequential, in double):
//   1. mask: while num_generated < min_tokens, the stop_token_ids and (unless ignore_eos)
//      the end-of-generation ids cannot be picked (greedy masks them too).
//   2. weights: w[i] = exp((logit[i] - max_logit) / temperature) in double, so the most
//      likely token weighs exactly 1; tokens with w == 0 (masked, -inf, underflow) drop out.
//   3. order: candidates sorted by w descending, then id ascending.
//   4. top-k (if k > 0): keep the first k.
//   5. top-p (if p < 1): total = sum of the kept weights (id order when nothing was cut
//      yet, sorted order otherwise); keep the shortest sorted prefix whose running sum
//      reaches p * total (always at least one token).
//   6. min-p (if > 0): keep the sorted prefix with w >= min_p (relative to the max, which
//      weighs 1; truncation does not change relative weights, so renormalising is moot).
//   7. draw: Z = sum of the kept weights (same rule as in 5); u = rng.uniform_double();
//      pick the first kept token whose running sum exceeds u * Z (the last kept one if
//      rounding leaves u * Z beyond the running total).
// Step 1 follows vLLM's min_tokens; steps 4-6 follow vLLM's order (top-k, top-p on the
// renormalised top-k distribution, min-p). Greedy consumes no random draw; every sampled
// step consumes exactly one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sample/rng.h"
#include "sample/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class Sampler {
 public:
  // logits:            [vocab_size] this sample's row; finite or -inf (NaN/+inf are bugs)
  // num_generated:     tokens this sample has generated so far (min_tokens masking)
  // end_of_generation: ids that end a generation (Tokenizer::special().end_of_generation)
  // rng:               this sample's stream (advanced by one draw unless greedy)
  TokenId sample(std::span<const float> logits, const SamplingParams& params,
                 int32_t num_generated, std::span<const TokenId> end_of_generation, Rng& rng);

 private:
  struct Candidate {
    double weight;
    TokenId id;
  };

  TokenId sample_random(std::span<const float> logits, const SamplingParams& params, Rng& rng);
  void ensure_sorted(std::size_t count);

  // Scratch reused across calls (one Sampler per thread).
  std::vector<TokenId> masked_;        // sorted, unique ids that cannot be picked this step
  std::vector<Candidate> candidates_;  // [num_candidates] id order, then lazily sorted
  std::size_t num_sorted_ = 0;         // candidates_[0, num_sorted_) are in final order
};

}  // namespace pagedgen
