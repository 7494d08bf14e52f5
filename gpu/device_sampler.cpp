#include "device_sampler.h"

#include <algorithm>
#include <span>

#include "sample/sampler.h"
#include "sample/sampling_math.h"
#include "sampling_kernels.h"
#include "util/error.h"

namespace pagedgen::gpu {

std::vector<SampledToken> DeviceSampler::sample(const float* logits, int32_t num_logits_rows, int32_t vocab,
                                                const SamplingBatch& sampling, cudaStream_t stream) {
  PG_CHECK(vocab >= 1 && vocab <= sampling::kMaxVocabSize, "vocabulary of {} tokens (the sampler takes 1 to {})",
           vocab, sampling::kMaxVocabSize);
  const auto num_rows = static_cast<int32_t>(sampling.rows.size());
  std::vector<DeviceSamplingRow> rows;
  rows.reserve(sampling.rows.size());
  masked_.clear();
  for (const SamplingRow& row : sampling.rows) {
    PG_CHECK(row.logits_row >= 0 && row.logits_row < num_logits_rows, "sampling row reads logits row {} of {}",
             row.logits_row, num_logits_rows);
    PG_CHECK(row.allowed_tokens.empty(), "a token mask for the device sampler, which applies none yet");
    const SamplingParams& params = *row.params;
    masked_ids(params, row.num_generated, sampling.end_of_generation, static_cast<std::size_t>(vocab), row_masked_);
    rows.push_back(DeviceSamplingRow{
        sampling::Cuts{params.top_k, params.top_p, params.min_p, row.random_bits}, params.temperature, row.logits_row,
        static_cast<int32_t>(masked_.size()), static_cast<int32_t>(row_masked_.size())});
    masked_.insert(masked_.end(), row_masked_.begin(), row_masked_.end());
  }
  int32_t* host_ids = nullptr;
  if (num_rows > 0) {
    ArrayPack pack;
    const std::size_t at_rows = pack.add(std::span<const DeviceSamplingRow>(rows));
    const std::size_t at_masked = pack.add(std::span<const TokenId>(masked_));
    std::byte* device_inputs = inputs_.upload(pack, stream);
    const std::size_t token_bytes = sampling.rows.size() * sizeof(int32_t);
    if (token_bytes > tokens_.bytes()) tokens_ = DeviceBuffer(std::max(token_bytes, tokens_.bytes() * 2));
    launch_sample(SamplingArgs{logits, reinterpret_cast<const DeviceSamplingRow*>(device_inputs + at_rows),
                               reinterpret_cast<const int32_t*>(device_inputs + at_masked), tokens_.as<int32_t>(),
                               num_rows, vocab},
                  stream);
    host_ids = reinterpret_cast<int32_t*>(host_tokens_.reserve(token_bytes));
    CUDA_CHECK(cudaMemcpyAsync(host_ids, tokens_.data(), token_bytes, cudaMemcpyDeviceToHost, stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<SampledToken> tokens(sampling.rows.size());
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (host_ids[i] >= 0) tokens[i] = host_ids[i];
  return tokens;
}

}  // namespace pagedgen::gpu
