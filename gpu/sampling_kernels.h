// The device sampler's kernel: one thread block per sampling row picks the row's token from
// its float32 logits row by the CPU Sampler's exact procedure (core/sample/sampler.h): its
// masked ids (min_tokens, bad_words) and its allowed-token mask (a grammar's,
// allowed_token_ids') exclude the same ids, with
// every number from sample/sampling_math.h and the cuts and draw of sample/radix_select.h,
// so from the same logits and random bits it picks the same token as the Sampler.
// Host code reaches it through DeviceSampler (device_sampler.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "sample/radix_select.h"

namespace pagedgen::gpu {

// One sampling row (sample/sampling_batch.h's SamplingRow with its request's parameters).
struct DeviceSamplingRow {
  sampling::Cuts cuts;    // top-k, top-p, min-p and the row's 64 random bits
  double temperature;     // 0 = greedy
  int32_t logits_row;     // row of SamplingArgs::logits
  int32_t penalized_row;  // row of SamplingArgs::penalized to read instead (step 0 applied); -1: none
  int32_t masked_begin;   // the row's masked ids (min_tokens, bad_words): masked_ids[masked_begin, + num_masked)
  int32_t num_masked;
  int32_t mask_row;  // row of SamplingArgs::allowed_words (its grammar's mask); -1: no grammar
  int32_t padding;
};

struct SamplingArgs {
  const float* logits;            // (logits rows, vocab)
  const float* penalized;         // (penalized rows, vocab) rows after step 0 (penalty_kernels.h)
  const DeviceSamplingRow* rows;  // [num_rows]
  const int32_t* masked_ids;      // each row's masked ids, sorted and unique, back to back
  const uint32_t* allowed_words;  // (mask rows, mask_words) grammar masks (sample/token_mask_pack.h):
                                  // bit id % 32 of word id / 32 set for the ids a row may pick
  int32_t mask_words;             // words per mask row: token_mask_words(vocab)
  int32_t* tokens;                // [num_rows] out: the token, or -1 when the row is not
                                  // usable (a NaN or +inf, or no unmasked finite logit)
  int32_t num_rows;
  int32_t vocab;  // <= sampling::kMaxVocabSize
};

void launch_sample(const SamplingArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
