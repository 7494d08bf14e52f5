// Sampler: picks a sample's next token from its logits row. Penalties and biases first;
// then greedy is argmax (lowest id wins ties); otherwise temperature, then top-k, top-p and
// min-p over the tokens ordered by probability, then one uniform draw. Bit-for-bit
// deterministic for the same inputs.
// This is the CPU implementation; gpu/sampling_kernels.h is the device one. Both take
// every number below from sampling_math.h, so they pick the same token.
//
// A row is not usable (no token, nullopt) when any logit is NaN or +inf, or no unmasked
// logit is above -inf (after step 0). Exact procedure for temperature > 0:
//   0. penalties and biases (penalties.h, with the params' has_penalties()): each token of
//      logit_bias, of the prompt (repetition_penalty) or generated (all three penalties)
//      gets sampling::penalized_logit; the steps below read that row (greedy too).
//   1. mask: while num_generated < min_tokens, the stop_token_ids and (unless ignore_eos)
//      the end-of-generation ids cannot be picked, nor the tokens bad_words bans after the
//      generated tokens (bad_words.h); with an allowed-token mask (a grammar's, and
//      allowed_token_ids', which the engine intersects), no token outside it can (greedy
//      masks all of them too).
//   2. weights, fixed point: q[i] = floor(2^44 * e^((logit[i] - max_logit) * (1 /
//      temperature))) in double, with sampling_math.h's portable_exp (not std::exp), so the
//      most likely token weighs exactly 2^44. Tokens with q == 0 (masked, -inf, or below
//      ~5.7e-14 of the best) are never picked. With integer weights every sum is exact,
//      whatever the order or the algorithm that forms it.
//   3. order: by q descending, then id ascending (sampling::sort_key). Each cut below
//      keeps a prefix of it.
//   4. top-k (if k > 0): keep the first k.
//   5. top-p (if p < 1): Z = sum of the kept q; keep the shortest prefix whose sum is
//      >= ceil(p * Z) (computed in double), i.e. top-p on the renormalised top-k set.
//   6. min-p (if > 0): keep the tokens with q >= min_p * 2^44 (the best always stays).
//   7. draw: Z = sum of the kept q; u = the next 53 random bits (Rng::uniform_double's);
//      target = floor(u * Z / 2^53) in 128-bit integers; pick the kept token whose range
//      [sum of the q before it, that + q) in the order of 3 holds target.
// Steps 4-6 follow vLLM's order and min_tokens rule. Greedy consumes no random draw;
// every sampled step consumes exactly one 64-bit output. The cost is O(vocab) per step:
// cuts and the draw use bucketed weighted selection, never a full sort. Rows have at most
// 2^19 tokens (sampling::kMaxVocabSize).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sample/penalties.h"
#include "sample/rng.h"
#include "sample/sampling_batch.h"
#include "sample/sampling_params.h"
#include "step/ids.h"

namespace pagedgen {

// Step 1: the ids of a row of `vocab_size` tokens that cannot be picked, sorted and unique,
// into `masked` (cleared first): stop and end-of-generation ids until min_tokens, and what
// bad_words bans after the last num_generated of `tokens` (the sample's, SamplingRow's;
// read only for bad words of several tokens).
void masked_ids(const SamplingParams& params, std::span<const TokenId> tokens, int32_t num_generated,
                std::span<const TokenId> end_of_generation, std::size_t vocab_size, std::vector<TokenId>& masked);

// Whether step 1 leaves any token of a row of `vocab_size` that could be picked were its
// logit finite: false when the row's masks and its allowed-token mask together exclude
// every token (a request error, not a numerical one).
bool masks_leave_a_token(const SamplingRow& row, std::span<const TokenId> end_of_generation, std::size_t vocab_size);

class Sampler {
 public:
  // logits:            [vocab_size] this sample's row
  // num_generated:     tokens this sample has generated so far (min_tokens masking)
  // end_of_generation: ids that end a generation (Tokenizer::special().end_of_generation)
  // rng:               this sample's stream (advanced by one output unless greedy)
  // allowed_tokens:    [token_mask_words(n) for some n <= vocab_size] bit (id % 32) of word
  //                    id / 32 set for the tokens that may be picked (grammar/token_bitmask.h);
  //                    ids past the mask may not be. Empty: no such mask.
  // Returns nullopt when the row is not usable (see above). Penalties and bad words of
  // several tokens need the sample's tokens: these two overloads take none and are for
  // params without them.
  std::optional<TokenId> sample(std::span<const float> logits, const SamplingParams& params, int32_t num_generated,
                                std::span<const TokenId> end_of_generation, Rng& rng,
                                std::span<const uint32_t> allowed_tokens = {});
  // The same with the draw taken beforehand: random_bits = rng.next_u64() (ignored when
  // greedy), as the engine hands it to a backend in a SamplingRow.
  std::optional<TokenId> sample(std::span<const float> logits, const SamplingParams& params, int32_t num_generated,
                                std::span<const TokenId> end_of_generation, uint64_t random_bits,
                                std::span<const uint32_t> allowed_tokens = {});
  // A backend's row (its logits_row already resolved to `logits`): its params, draw, mask
  // and, for penalties, its tokens.
  std::optional<TokenId> sample(std::span<const float> logits, const SamplingRow& row,
                                std::span<const TokenId> end_of_generation);

 private:
  struct Candidate {
    uint64_t weight;  // q of step 2
    TokenId id;
  };

  TokenId sample_random(std::span<const float> logits, const SamplingParams& params, float max_logit,
                        uint64_t random_bits, std::span<const uint32_t> allowed_tokens);
  Candidate select_by_mass(uint64_t target);
  uint64_t total_weight() const;

  // Scratch reused across calls (one Sampler per thread).
  LogitPenalizer penalizer_;           // step 0's row
  std::vector<TokenId> masked_;        // sorted, unique ids that cannot be picked this step
  std::vector<Candidate> candidates_;  // [num_candidates] the tokens still in play, any order
  std::vector<Candidate> bucket_;      // select_by_mass's candidates of one weight bucket
};

}  // namespace pagedgen
