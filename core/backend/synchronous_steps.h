// SynchronousSteps: Backend::submit()/collect() for a backend that computes a step at once
// (backend.h): a step runs at submission, its ids wait in a queue for collect(), and the
// overlap tokens of a step are filled from the ids of the step submitted before it.
#pragma once

#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "sample/sampling_batch.h"
#include "step/overlap_token.h"
#include "step/step_batch.h"

namespace pagedgen {

class SynchronousSteps {
 public:
  using RunStep = std::function<std::vector<SampledToken>(const StepBatch&)>;

  // Runs `run` on `batch` (on a copy with the overlap tokens filled in, when there are any)
  // and queues its ids.
  void submit(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens, const RunStep& run);
  // The ids of the oldest step not collected.
  std::vector<SampledToken> collect();

 private:
  std::deque<std::vector<SampledToken>> results_;  // submitted, not collected, oldest first
  std::vector<SampledToken> last_;                 // ids of the last step submitted
  StepBatch filled_;                               // scratch: a batch with its overlap tokens
};

}  // namespace pagedgen
