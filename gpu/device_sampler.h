// DeviceSampler: samples a step's rows on the device from logits that are already there
// (sampling_kernels.h), so only the chosen token ids cross to the host. Each row's
// parameters, random bits, masked ids, grammar mask (sample/token_mask_pack.h) and
// penalized tokens (penalty_kernels.h) go over in one asynchronous copy from pinned
// memory, and the ids (with the log probabilities rows ask for, logprob_kernels.h) come
// back the same way into one of two pinned result slots, so that one step's ids can be
// read while the next step is queued behind it. Prompt rows (sampling_batch.h) are log
// probability rows of a given token, after the sampled ones. It runs eagerly after the forward pass
// (never inside a decode CUDA graph), on the step's sampling rows only: a graph's padding
// rows are never sampled, and the inputs may move whenever they grow.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <vector>

#include "device_buffer.h"
#include "logprob_kernels.h"
#include "penalty_kernels.h"
#include "sample/penalties.h"
#include "sample/sampling_batch.h"
#include "sample/token_mask_pack.h"
#include "sampling_kernels.h"
#include "staged_upload.h"

namespace pagedgen::gpu {

class DeviceSampler {
 public:
  DeviceSampler() = default;
  ~DeviceSampler();
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  // logits: device (num_logits_rows, vocab) float32, written by work queued on `stream`.
  // Queues the sampling of every row of `sampling` after it, exactly as the CPU Sampler
  // would pick from the same logits, and the copy of the ids to the host; returns at once.
  // At most two enqueued steps may wait for collect().
  void enqueue(const float* logits, int32_t num_logits_rows, int32_t vocab, const SamplingBatch& sampling,
               cudaStream_t stream);
  // The device ids of the last step enqueued: [its rows] int32, -1 for a row whose logits
  // are not usable. Valid on the stream until a later enqueue() after the next one.
  const int32_t* last_device_tokens() const;
  // Waits for the oldest enqueued step's ids; one SampledToken per row, in order (none for
  // a row whose logits are not usable), then one per prompt row.
  std::vector<SampledToken> collect();

  // enqueue() then collect().
  std::vector<SampledToken> sample(const float* logits, int32_t num_logits_rows, int32_t vocab,
                                   const SamplingBatch& sampling, cudaStream_t stream);

  std::size_t device_bytes() const;

 private:
  // One step's results: device ids and log probabilities, their pinned copy, the rows that
  // asked for log probabilities, and the event after the copy.
  struct Slot {
    DeviceBuffer tokens;                         // [rows] int32 chosen ids
    DeviceBuffer logprob_out;                    // logprob_kernels.h's outputs: values, then ids
    PinnedBuffer host_tokens;                    // [rows] int32, then the logprob outputs, copied back
    std::vector<DeviceLogprobRow> logprob_rows;  // the sampled rows' that ask, then the prompt rows
    cudaEvent_t copied = nullptr;
    int32_t num_rows = 0;         // sampled rows
    int32_t num_prompt_rows = 0;  // prompt rows, whose results follow the sampled rows'
  };
  static constexpr int kSlots = 2;

  // Where one step's inputs sit on the device after their upload.
  struct StepInputs {
    const DeviceSamplingRow* rows;
    const int32_t* masked;    // the rows' masked ids, back to back
    const uint32_t* allowed;  // the grammar masks' words
    const DevicePenaltyRow* penalty_rows;
    const DeviceTokenPenalty* penalty_tokens;
    const DeviceLogprobRow* logprob_rows;
  };

  // The device form of `sampling`'s rows; their masked ids, grammar masks, penalties and
  // log probability rows (into `slot`) gathered for the upload.
  std::vector<DeviceSamplingRow> gather_rows(int32_t num_logits_rows, int32_t vocab, const SamplingBatch& sampling,
                                             Slot& slot);
  // `row`'s penalized tokens appended to the penalty rows; returns its penalty row.
  int32_t add_penalty_row(const SamplingRow& row, int32_t vocab);
  // Queues one step on `stream`: the inputs' upload, the penalties, the sampling, the log
  // probabilities and the copy of the results to `slot`'s pinned memory.
  void launch_step(const float* logits, int32_t vocab, std::span<const DeviceSamplingRow> rows, Slot& slot,
                   cudaStream_t stream);
  StepInputs upload_inputs(std::span<const DeviceSamplingRow> rows, const Slot& slot, cudaStream_t stream);
  // Appends the log probability rows of `sampling`'s prompt rows to `slot`'s.
  static void gather_prompt_rows(int32_t num_logits_rows, int32_t vocab, const SamplingBatch& sampling, Slot& slot);
  // `slot`'s result buffers made large enough for this step's ids and log probabilities.
  void grow_results(Slot& slot, std::size_t token_bytes, std::size_t logprob_out_bytes, cudaStream_t stream);

  StagedUpload inputs_;     // rows, masked ids, masks, penalty rows, penalized tokens, logprob rows
  DeviceBuffer penalized_;  // (penalty rows, vocab) float32 rows after step 0
  Slot slots_[kSlots];
  int next_slot_ = 0;                        // the slot the next enqueue() fills
  int num_pending_ = 0;                      // enqueued, not collected (the oldest is next_slot_ - num_pending_)
  std::vector<TokenId> row_masked_;          // one row's masked ids (scratch)
  std::vector<TokenId> masked_;              // every row's, back to back
  TokenMaskPack mask_pack_;                  // the rows' grammar masks
  std::vector<TokenPenalty> row_penalties_;  // one row's penalized tokens (scratch)
  std::vector<TokenId> scratch_ids_;
  std::vector<DevicePenaltyRow> penalty_rows_;      // the rows with penalties
  std::vector<DeviceTokenPenalty> penalty_tokens_;  // their tokens, back to back
};

}  // namespace pagedgen::gpu
