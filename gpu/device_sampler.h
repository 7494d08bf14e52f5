// DeviceSampler: samples a step's rows on the device from logits that are already there
// (sampling_kernels.h), so only the chosen token ids cross to the host. Each row's
// parameters, random bits, masked ids and penalized tokens (penalty_kernels.h) go over in
// one asynchronous copy from pinned memory, the ids (and the log probabilities rows ask
// for, logprob_kernels.h) come back the same way, and one stream synchronization ends the
// step.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "logprob_kernels.h"
#include "penalty_kernels.h"
#include "sample/penalties.h"
#include "sample/sampling_batch.h"
#include "staged_upload.h"

namespace pagedgen::gpu {

class DeviceSampler {
 public:
  // logits: device (num_logits_rows, vocab) float32, written by work queued on `stream`.
  // Queues the sampling after it, waits for the stream and returns one SampledToken per
  // row of `sampling`, in order (none for a row whose logits are not usable), exactly as
  // the CPU Sampler would pick from the same logits.
  std::vector<SampledToken> sample(const float* logits, int32_t num_logits_rows, int32_t vocab,
                                   const SamplingBatch& sampling, cudaStream_t stream);

  std::size_t device_bytes() const {
    return inputs_.device_bytes() + tokens_.bytes() + penalized_.bytes() + logprob_out_.bytes();
  }

 private:
  StagedUpload inputs_;               // rows, masked ids, penalty rows, penalized tokens
  DeviceBuffer tokens_;               // [rows] int32 chosen ids
  DeviceBuffer penalized_;            // (penalty rows, vocab) float32 rows after step 0
  DeviceBuffer logprob_out_;          // logprob_kernels.h's outputs: values, then ids
  PinnedBuffer host_tokens_;          // [rows] int32, then the logprob outputs, copied back
  std::byte* host_logprobs_ = nullptr;  // where in host_tokens_ the logprob outputs lie
  std::vector<TokenId> row_masked_;   // one row's masked ids (scratch)
  std::vector<TokenId> masked_;       // every row's, back to back
  std::vector<TokenPenalty> row_penalties_;  // one row's penalized tokens (scratch)
  std::vector<TokenId> scratch_ids_;
  std::vector<DevicePenaltyRow> penalty_rows_;       // the rows with penalties
  std::vector<DeviceTokenPenalty> penalty_tokens_;   // their tokens, back to back
  std::vector<DeviceLogprobRow> logprob_rows_;       // the rows that ask for logprobs
};

}  // namespace pagedgen::gpu
