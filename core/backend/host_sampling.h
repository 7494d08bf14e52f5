// HostSampling: a step on the host from a LogitsBackend's logits: forward(), then each
// sampling row with the Sampler (sampler.h) from its logits row (none for a row with a
// NaN, a +inf or no unmasked finite logit). The CPU backend's step.
#pragma once

#include <vector>

#include "backend/logits_backend.h"
#include "sample/sampler.h"

namespace pagedgen {

class HostSampling {
 public:
  std::vector<SampledToken> step(LogitsBackend& backend, const StepBatch& batch, const SamplingBatch& sampling);

 private:
  std::vector<float> logits_;  // (logits_rows, vocab) of the last step
  Sampler sampler_;
};

}  // namespace pagedgen
