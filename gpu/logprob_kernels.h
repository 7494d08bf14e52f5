// The device side of log probabilities (core/sample/token_logprobs.h): for each sampling
// row that asks, one thread block computes the sampled token's log-softmax and the top k
// over the row's raw logits in the CPU's fixed order (max; chunks of kLogSumChunk ids
// summed in id order by one thread each with portable_exp, then the chunk sums in order;
// log), so the sums are the CPU's bits and the logs agree within one ulp of a double, and
// the token's rank (ids whose logit is >= its own). Runs after the sampling kernel, whose
// token ids it reads; a prompt row (sampling_batch.h) names its token instead, and is first
// checked for usability as the sampler checks a row (a NaN or +inf, or no finite logit:
// rank 0 and nothing else written).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "sample/sampling_params.h"

namespace pagedgen::gpu {

struct DeviceLogprobRow {
  int32_t logits_row;    // row of LogprobArgs::logits (raw: before penalties)
  int32_t sampling_row;  // its token in LogprobArgs::tokens; a prompt row: its result's index
  int32_t num_top;       // <= kMaxTopLogprobs
  int32_t prompt_token;  // a prompt row's token; -1: the sampled token of sampling_row
};

struct LogprobArgs {
  const float* logits;           // (logits rows, vocab)
  const DeviceLogprobRow* rows;  // [num_rows]
  const int32_t* tokens;         // [sampling rows] the sampled ids, -1 for a row with none
  float* logprobs;               // [num_rows][1 + kMaxTopLogprobs] out: the token's, then the top k's
  int32_t* top_ids;              // [num_rows][kMaxTopLogprobs] out
  int32_t* ranks;                // [num_rows] out: the token's rank; 0: a prompt row not usable
  int32_t num_rows;
  int32_t vocab;
};

void launch_logprobs(const LogprobArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
