#include "backend/synchronous_steps.h"

#include "util/error.h"

namespace pagedgen {

void SynchronousSteps::submit(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens,
                              const RunStep& run) {
  PG_CHECK(results_.size() < 2, "a third step submitted before the first was collected");
  const StepBatch* input = &batch;
  if (!overlap_tokens.empty()) {
    filled_ = batch;
    for (const OverlapToken& d : overlap_tokens) {
      PG_CHECK(d.token_index >= 0 && d.token_index < filled_.num_tokens && d.sampling_row >= 0 &&
                   static_cast<std::size_t>(d.sampling_row) < last_.size(),
               "overlap token {} from row {}: the batch has {} tokens, the previous step {} rows", d.token_index,
               d.sampling_row, filled_.num_tokens, last_.size());
      filled_.token_ids[static_cast<std::size_t>(d.token_index)] =
          last_[static_cast<std::size_t>(d.sampling_row)].id.value_or(kFailedRowInputToken);
    }
    input = &filled_;
  }
  last_ = run(*input);
  results_.push_back(last_);
}

std::vector<SampledToken> SynchronousSteps::collect() {
  PG_CHECK(!results_.empty(), "collect with no step submitted");
  std::vector<SampledToken> tokens = std::move(results_.front());
  results_.pop_front();
  return tokens;
}

}  // namespace pagedgen
