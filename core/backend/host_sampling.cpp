#include "backend/host_sampling.h"

#include "sample/token_logprobs.h"
#include "util/error.h"

namespace pagedgen {

std::vector<SampledToken> HostSampling::step(LogitsBackend& backend, const StepBatch& batch,
                                             const SamplingBatch& sampling) {
  const auto vocab = static_cast<std::size_t>(backend.vocab_size());
  logits_.resize(batch.logits_rows.size() * vocab);
  backend.forward(batch, logits_);
  const std::size_t num_rows = sampling.rows.size();
  std::vector<SampledToken> tokens(num_rows + sampling.prompt_rows.size());
  const auto logits_of = [&](int32_t logits_row) {
    PG_CHECK(logits_row >= 0 && static_cast<std::size_t>(logits_row) < batch.logits_rows.size(),
             "sampling row reads logits row {} of {}", logits_row, batch.logits_rows.size());
    return std::span<const float>(logits_.data() + static_cast<std::size_t>(logits_row) * vocab, vocab);
  };
  auto sample_row = [&](std::size_t i, std::size_t thread) {
    SampledToken& token = tokens[i];
    if (i >= num_rows) {  // a prompt row: the token is given, only its log probabilities are computed
      const PromptLogprobRow& row = sampling.prompt_rows[i - num_rows];
      const std::span<const float> logits = logits_of(row.logits_row);
      if (!is_usable_logprobs_row(logits)) return;
      token.id = row.token;
      token.logprobs = token_logprobs(logits, row.token, row.num_top);
      return;
    }
    const SamplingRow& row = sampling.rows[i];
    const std::span<const float> logits = logits_of(row.logits_row);
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
