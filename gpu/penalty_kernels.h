// The device sampler's step 0 (core/sample/sampler.h): penalties and biases. For each row
// that has any, one thread block copies its logits row into a row of its own and applies
// sampling::penalized_logit (sample/sampling_math.h, the CPU's arithmetic) to the tokens
// the host listed (sample/penalties.h's find_penalized_tokens), so the sampling kernel
// then reads the same penalized row the CPU Sampler reads. Own rows, because several
// sampling rows may read one logits row (the n samples of a prompt).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "sample/sampling_math.h"

namespace pagedgen::gpu {

// One token of a penalized row (TokenPenalty of sample/penalties.h).
struct DeviceTokenPenalty {
  double bias;
  int32_t id;
  int32_t num_times_generated;
  int32_t in_sequence;  // 0 or 1
  int32_t padding;
};

// One penalized row: which logits row it copies and its tokens.
struct DevicePenaltyRow {
  sampling::Penalties penalties;
  int32_t logits_row;    // row of PenaltyArgs::logits
  int32_t tokens_begin;  // its tokens: PenaltyArgs::tokens[tokens_begin, + num_tokens)
  int32_t num_tokens;
  int32_t padding;
};

struct PenaltyArgs {
  const float* logits;               // (logits rows, vocab)
  const DevicePenaltyRow* rows;      // [num_rows]
  const DeviceTokenPenalty* tokens;  // every row's, back to back, each row's ids distinct
  float* penalized;                  // (num_rows, vocab) out
  int32_t num_rows;
  int32_t vocab;
};

void launch_penalize(const PenaltyArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
