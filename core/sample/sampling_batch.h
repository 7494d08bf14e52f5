// SamplingBatch: what a backend needs to pick the tokens of one step, beside its StepBatch.
// One row per token to sample; a row reads one logits row of the step (several rows may
// read the same one: the n samples of a prompt start from its last position's logits).
//
//   StepBatch::logits_rows  [ 4    9 ]          two sequences need logits
//   SamplingBatch rows      [ 0    1   1   1 ]  the second starts 3 samples (n = 3)
//
// The random draw of each row is taken by the engine from the sample's own stream before
// the step, and so is its allowed-token mask (structured outputs, allowed_token_ids);
// penalties and bad words read the sample's own tokens. So the result never depends on where or in which order rows are
// sampled, on the block size or on sharing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sample/sampling_params.h"
#include "sample/token_logprobs.h"
#include "step/ids.h"

namespace pagedgen {

struct SamplingRow {
  int32_t logits_row = 0;                  // index into StepBatch::logits_rows
  const SamplingParams* params = nullptr;  // the request's; outlives the step
  int32_t num_generated = 0;               // tokens the sample has generated (min_tokens masking)
  uint64_t random_bits = 0;                // the sample's next 64 random bits; unused when greedy
  // [token_mask_words(tokenizer vocab)] the tokens it may pick now, one bit per id
  // (grammar/token_bitmask.h): its grammar's mask, intersected with allowed_token_ids'
  // (allowed_token_ids.h); owned by the engine, unchanged until the step ends. Empty: no
  // grammar and no allowed_token_ids, every token may be picked. Only backends whose
  // applies_token_masks() is true are given rows with a mask.
  std::span<const uint32_t> allowed_tokens;
  // [prompt + num_generated] the sample's tokens, prompt first, generated last (the
  // Sequence's, owned by the scheduler, unchanged until the step ends): what penalties
  // count and bad words follow. Read only when params->has_penalties() or
  // params->bans_after_tokens().
  std::span<const TokenId> tokens;
};

// What one row gave: its token, or nothing when the row's logits were not usable (a NaN or
// +inf, or no finite value at all): a numerical failure of the model on that input, which
// ends the request with an error record instead of the process. With params->logprobs,
// the token's log probability and the most likely alternatives (token_logprobs.h).
struct SampledToken {
  std::optional<TokenId> id;
  std::optional<TokenLogprobs> logprobs;  // set when the row asked and has a token
};

// A prompt position to score (prompt_logprobs): nothing is drawn; the result is the next
// prompt token's log probability and the num_top most likely tokens, from the model's
// logits at that position (token_logprobs.h), as for a sampled token.
//
//   prompt      t0  t1  t2  t3        logits row of position p scores t(p+1):
//   positions   0   1   2   3         rows of positions 0, 1, 2 -> t1, t2, t3 (t0: none)
struct PromptLogprobRow {
  int32_t logits_row = 0;  // index into StepBatch::logits_rows
  TokenId token = 0;       // the prompt token that follows that position
  int32_t num_top = 0;     // <= kMaxTopLogprobs
};

struct SamplingBatch {
  std::vector<SamplingRow> rows;           // [num_samples] in the order token ids come back
  std::vector<TokenId> end_of_generation;  // the tokenizer's end-of-generation ids
  // [num_prompt_rows] their results come back after the rows': a SampledToken whose id is
  // the row's token, with its logprobs (none when the logits row is not usable).
  std::vector<PromptLogprobRow> prompt_rows;
};

}  // namespace pagedgen
