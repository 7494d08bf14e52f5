#include "device_sampler.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "logprob_kernels.h"
#include "penalty_kernels.h"
#include "sample/penalties.h"
#include "sample/sampler.h"
#include "sample/sampling_math.h"
#include "sampling_kernels.h"
#include "util/error.h"

namespace pagedgen::gpu {

DeviceSampler::~DeviceSampler() {
  for (Slot& slot : slots_)
    if (slot.copied != nullptr) {
      cudaEventSynchronize(slot.copied);
      cudaEventDestroy(slot.copied);
    }
}

void DeviceSampler::enqueue(const float* logits, int32_t num_logits_rows, int32_t vocab, const SamplingBatch& sampling,
                            cudaStream_t stream) {
  PG_CHECK(vocab >= 1 && vocab <= sampling::kMaxVocabSize, "vocabulary of {} tokens (the sampler takes 1 to {})", vocab,
           sampling::kMaxVocabSize);
  PG_CHECK(num_pending_ < kSlots, "a third step sampled before the first was collected");
  Slot& slot = slots_[next_slot_];
  const std::vector<DeviceSamplingRow> rows = gather_rows(num_logits_rows, vocab, sampling, slot);
  if (slot.copied == nullptr) CUDA_CHECK(cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming));
  slot.num_rows = static_cast<int32_t>(sampling.rows.size());
  slot.num_prompt_rows = static_cast<int32_t>(sampling.prompt_rows.size());
  if (!slot.logprob_rows.empty() || slot.num_rows > 0) launch_step(logits, vocab, rows, slot, stream);
  CUDA_CHECK(cudaEventRecord(slot.copied, stream));
  next_slot_ = (next_slot_ + 1) % kSlots;
  ++num_pending_;
}

std::vector<DeviceSamplingRow> DeviceSampler::gather_rows(int32_t num_logits_rows, int32_t vocab,
                                                          const SamplingBatch& sampling, Slot& slot) {
  std::vector<DeviceSamplingRow> rows;
  rows.reserve(sampling.rows.size());
  masked_.clear();
  mask_pack_.clear(vocab);
  penalty_rows_.clear();
  penalty_tokens_.clear();
  slot.logprob_rows.clear();
  for (const SamplingRow& row : sampling.rows) {
    PG_CHECK(row.logits_row >= 0 && row.logits_row < num_logits_rows, "sampling row reads logits row {} of {}",
             row.logits_row, num_logits_rows);
    const SamplingParams& params = *row.params;
    if (params.logprobs)
      slot.logprob_rows.push_back(
          DeviceLogprobRow{row.logits_row, static_cast<int32_t>(rows.size()), std::min(*params.logprobs, vocab), -1});
    const int32_t penalized_row = params.has_penalties() ? add_penalty_row(row, vocab) : -1;
    masked_ids(params, row.tokens, row.num_generated, sampling.end_of_generation, static_cast<std::size_t>(vocab),
               row_masked_);
    const std::optional<int32_t> mask_row = mask_pack_.add(row.allowed_tokens);
    rows.push_back(DeviceSamplingRow{sampling::Cuts{params.top_k, params.top_p, params.min_p, row.random_bits},
                                     params.is_greedy() ? 0.0 : params.temperature, row.logits_row, penalized_row,
                                     static_cast<int32_t>(masked_.size()), static_cast<int32_t>(row_masked_.size()),
                                     mask_row.value_or(-1), 0});
    masked_.insert(masked_.end(), row_masked_.begin(), row_masked_.end());
  }
  gather_prompt_rows(num_logits_rows, vocab, sampling, slot);
  return rows;
}

void DeviceSampler::gather_prompt_rows(int32_t num_logits_rows, int32_t vocab, const SamplingBatch& sampling,
                                       Slot& slot) {
  const auto first_result = static_cast<int32_t>(sampling.rows.size());
  for (std::size_t i = 0; i < sampling.prompt_rows.size(); ++i) {
    const PromptLogprobRow& row = sampling.prompt_rows[i];
    PG_CHECK(row.logits_row >= 0 && row.logits_row < num_logits_rows, "prompt row reads logits row {} of {}",
             row.logits_row, num_logits_rows);
    PG_CHECK(row.token >= 0 && row.token < vocab, "prompt row of token {} in a vocabulary of {}", row.token, vocab);
    slot.logprob_rows.push_back(DeviceLogprobRow{row.logits_row, first_result + static_cast<int32_t>(i),
                                                 std::min(row.num_top, vocab), row.token});
  }
}

int32_t DeviceSampler::add_penalty_row(const SamplingRow& row, int32_t vocab) {
  const SamplingParams& params = *row.params;
  find_penalized_tokens(params, row.tokens, row.num_generated, static_cast<std::size_t>(vocab), row_penalties_,
                        scratch_ids_);
  const auto penalized_row = static_cast<int32_t>(penalty_rows_.size());
  penalty_rows_.push_back(DevicePenaltyRow{penalties_of(params), row.logits_row,
                                           static_cast<int32_t>(penalty_tokens_.size()),
                                           static_cast<int32_t>(row_penalties_.size()), 0});
  for (const TokenPenalty& t : row_penalties_)
    penalty_tokens_.push_back(DeviceTokenPenalty{t.bias, t.id, t.num_times_generated, t.in_sequence ? 1 : 0, 0});
  return penalized_row;
}

void DeviceSampler::launch_step(const float* logits, int32_t vocab, std::span<const DeviceSamplingRow> rows, Slot& slot,
                                cudaStream_t stream) {
  const StepInputs inputs = upload_inputs(rows, slot, stream);
  const std::size_t penalized_bytes = penalty_rows_.size() * static_cast<std::size_t>(vocab) * sizeof(float);
  // The penalized rows are read only by this step's kernels, queued in stream order, so
  // the buffer is reused by the next step; cudaFree waits for work still reading it.
  if (penalized_bytes > penalized_.bytes())
    penalized_ = DeviceBuffer(std::max(penalized_bytes, penalized_.bytes() * 2));
  launch_penalize(PenaltyArgs{logits, inputs.penalty_rows, inputs.penalty_tokens, penalized_.as<float>(),
                              static_cast<int32_t>(penalty_rows_.size()), vocab},
                  stream);
  const std::size_t token_bytes = rows.size() * sizeof(int32_t);
  const std::size_t num_logprob_rows = slot.logprob_rows.size();
  const std::size_t logprob_bytes = num_logprob_rows * (1 + kMaxTopLogprobs) * sizeof(float);
  const std::size_t top_ids_bytes = num_logprob_rows * kMaxTopLogprobs * sizeof(int32_t);
  const std::size_t logprob_out_bytes = logprob_bytes + top_ids_bytes + num_logprob_rows * sizeof(int32_t);
  grow_results(slot, token_bytes, logprob_out_bytes, stream);
  launch_sample(SamplingArgs{logits, penalized_.as<float>(), inputs.rows, inputs.masked, inputs.allowed,
                             static_cast<int32_t>(mask_pack_.words_per_row()), slot.tokens.as<int32_t>(),
                             static_cast<int32_t>(rows.size()), vocab},
                stream);
  // Log probabilities from the raw logits, after the tokens are known: per row the
  // token's value and the top k's, then their ids, back to the host with the ids.
  std::byte* out = slot.logprob_out.as<std::byte>();
  launch_logprobs(LogprobArgs{logits, inputs.logprob_rows, slot.tokens.as<int32_t>(), slot.logprob_out.as<float>(),
                              reinterpret_cast<int32_t*>(out + logprob_bytes),
                              reinterpret_cast<int32_t*>(out + logprob_bytes + top_ids_bytes),
                              static_cast<int32_t>(num_logprob_rows), vocab},
                  stream);
  std::byte* host = slot.host_tokens.reserve(token_bytes + logprob_out_bytes);
  if (token_bytes > 0)
    CUDA_CHECK(cudaMemcpyAsync(host, slot.tokens.data(), token_bytes, cudaMemcpyDeviceToHost, stream));
  if (logprob_out_bytes > 0)
    CUDA_CHECK(cudaMemcpyAsync(host + token_bytes, slot.logprob_out.data(), logprob_out_bytes, cudaMemcpyDeviceToHost,
                               stream));
}

DeviceSampler::StepInputs DeviceSampler::upload_inputs(std::span<const DeviceSamplingRow> rows, const Slot& slot,
                                                       cudaStream_t stream) {
  ArrayPack pack;
  const PackedArray<DeviceSamplingRow> at_rows = pack.add(rows);
  const PackedArray<TokenId> at_masked = pack.add(std::span<const TokenId>(masked_));
  const PackedArray<uint32_t> at_allowed = pack.add(mask_pack_.words());
  const PackedArray<DevicePenaltyRow> at_penalty_rows = pack.add(std::span<const DevicePenaltyRow>(penalty_rows_));
  const PackedArray<DeviceTokenPenalty> at_penalty_tokens =
      pack.add(std::span<const DeviceTokenPenalty>(penalty_tokens_));
  const PackedArray<DeviceLogprobRow> at_logprob_rows = pack.add(std::span<const DeviceLogprobRow>(slot.logprob_rows));
  std::byte* device_inputs = inputs_.upload(pack, stream);
  return StepInputs{at_rows.in(device_inputs),           at_masked.in(device_inputs),
                    at_allowed.in(device_inputs),        at_penalty_rows.in(device_inputs),
                    at_penalty_tokens.in(device_inputs), at_logprob_rows.in(device_inputs)};
}

void DeviceSampler::grow_results(Slot& slot, std::size_t token_bytes, std::size_t logprob_out_bytes,
                                 cudaStream_t stream) {
  if (token_bytes <= slot.tokens.bytes() && logprob_out_bytes <= slot.logprob_out.bytes()) return;
  // This slot's last ids were collected; the stream may still read them (a overlap_tokens
  // token of the step after them), so a new buffer waits for it.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (token_bytes > slot.tokens.bytes()) slot.tokens = DeviceBuffer(std::max(token_bytes, slot.tokens.bytes() * 2));
  if (logprob_out_bytes > slot.logprob_out.bytes())
    slot.logprob_out = DeviceBuffer(std::max(logprob_out_bytes, slot.logprob_out.bytes() * 2));
}

const int32_t* DeviceSampler::last_device_tokens() const {
  return slots_[(next_slot_ + kSlots - 1) % kSlots].tokens.as<int32_t>();
}

std::vector<SampledToken> DeviceSampler::collect() {
  PG_CHECK(num_pending_ > 0, "collect with no step sampled");
  Slot& slot = slots_[(next_slot_ + kSlots - num_pending_) % kSlots];
  --num_pending_;
  CUDA_CHECK(cudaEventSynchronize(slot.copied));
  const auto num_rows = static_cast<std::size_t>(slot.num_rows);
  std::vector<SampledToken> tokens(num_rows + static_cast<std::size_t>(slot.num_prompt_rows));
  const std::byte* host = slot.host_tokens.reserve(0);
  const auto* host_ids = reinterpret_cast<const int32_t*>(host);
  for (std::size_t i = 0; i < num_rows; ++i)
    if (host_ids[i] >= 0) tokens[i].id = host_ids[i];
  const std::byte* host_logprobs = host + num_rows * sizeof(int32_t);
  const std::size_t logprob_bytes = slot.logprob_rows.size() * (1 + kMaxTopLogprobs) * sizeof(float);
  const std::size_t top_ids_bytes = slot.logprob_rows.size() * kMaxTopLogprobs * sizeof(int32_t);
  for (std::size_t r = 0; r < slot.logprob_rows.size(); ++r) {
    const DeviceLogprobRow& row = slot.logprob_rows[r];
    SampledToken& token = tokens[static_cast<std::size_t>(row.sampling_row)];
    int32_t rank = 0;
    std::memcpy(&rank, host_logprobs + logprob_bytes + top_ids_bytes + r * sizeof(rank), sizeof(rank));
    if (row.prompt_token >= 0 && rank > 0) token.id = row.prompt_token;  // rank 0: its logits were not usable
    if (!token.id) continue;
    float values[1 + kMaxTopLogprobs];
    int32_t ids[kMaxTopLogprobs];
    std::memcpy(values, host_logprobs + r * sizeof(values), sizeof(values));
    std::memcpy(ids, host_logprobs + logprob_bytes + r * sizeof(ids), sizeof(ids));
    TokenLogprobs& logprobs = token.logprobs.emplace();
    logprobs.logprob = values[0];
    logprobs.rank = rank;
    for (int32_t j = 0; j < row.num_top; ++j) logprobs.top.push_back({ids[j], values[1 + j]});
  }
  return tokens;
}

std::vector<SampledToken> DeviceSampler::sample(const float* logits, int32_t num_logits_rows, int32_t vocab,
                                                const SamplingBatch& sampling, cudaStream_t stream) {
  enqueue(logits, num_logits_rows, vocab, sampling, stream);
  return collect();
}

std::size_t DeviceSampler::device_bytes() const {
  std::size_t bytes = inputs_.device_bytes() + penalized_.bytes();
  for (const Slot& slot : slots_) bytes += slot.tokens.bytes() + slot.logprob_out.bytes();
  return bytes;
}

}  // namespace pagedgen::gpu
