#include "backend/logits_backend.h"

#include <cmath>
#include <limits>

#include "util/error.h"

namespace pagedgen {

namespace {

// Whether the sampler can read the row: no NaN, no +inf, and some finite logit.
bool usable(std::span<const float> logits) {
  bool any_finite = false;
  for (float logit : logits) {
    if (std::isnan(logit) || logit == std::numeric_limits<float>::infinity()) return false;
    any_finite = any_finite || logit != -std::numeric_limits<float>::infinity();
  }
  return any_finite;
}

}  // namespace

std::vector<SampledToken> LogitsBackend::step(const StepBatch& batch, const SamplingBatch& sampling) {
  const auto vocab = static_cast<std::size_t>(vocab_size());
  logits_.resize(batch.logits_rows.size() * vocab);
  forward(batch, logits_);
  std::vector<SampledToken> tokens;
  tokens.reserve(sampling.rows.size());
  for (const SamplingRow& row : sampling.rows) {
    PG_CHECK(row.logits_row >= 0 && static_cast<std::size_t>(row.logits_row) < batch.logits_rows.size(),
             "sampling row reads logits row {} of {}", row.logits_row, batch.logits_rows.size());
    const std::span<const float> logits(logits_.data() + static_cast<std::size_t>(row.logits_row) * vocab, vocab);
    if (!usable(logits)) {
      tokens.emplace_back();
      continue;
    }
    tokens.push_back(sampler_.sample(logits, *row.params, row.num_generated, sampling.end_of_generation,
                                     row.random_bits));
  }
  return tokens;
}

}  // namespace pagedgen
