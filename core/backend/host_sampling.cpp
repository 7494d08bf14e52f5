#include "backend/host_sampling.h"

#include "sample/token_logprobs.h"
#include "util/error.h"

namespace pagedgen {

std::vector<SampledToken> HostSampling::step(LogitsBackend& backend, const StepBatch& batch,
                                             const SamplingBatch& sampling) {
  const auto vocab = static_cast<std::size_t>(backend.vocab_size());
  logits_.resize(batch.logits_rows.size() * vocab);
  backend.forward(batch, logits_);
  std::vector<SampledToken> tokens(sampling.rows.size());
  auto sample_row = [&](std::size_t i, std::size_t thread) {
    const SamplingRow& row = sampling.rows[i];
    PG_CHECK(row.logits_row >= 0 && static_cast<std::size_t>(row.logits_row) < batch.logits_rows.size(),
             "sampling row reads logits row {} of {}", row.logits_row, batch.logits_rows.size());
    const std::span<const float> logits(logits_.data() + static_cast<std::size_t>(row.logits_row) * vocab, vocab);
    SampledToken& token = tokens[i];
    token.id = samplers_[thread].sample(logits, row, sampling.end_of_generation);
    if (token.id && row.params->logprobs) token.logprobs = token_logprobs(logits, *token.id, *row.params->logprobs);
  };
  if (pool_ != nullptr) {
    pool_->run(tokens.size(), sample_row);
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) sample_row(i, 0);
  }
  return tokens;
}

}  // namespace pagedgen
