// LogitsBackend: a Backend that computes logits (the CPU and CUDA backends). Its step()
// samples them on the host with the Sampler (sampler.h), which is the CPU backend's path;
// the CUDA backend overrides step() to sample on the device. forward() alone serves the
// tests that compare logits across backends and references.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "sample/sampler.h"

namespace pagedgen {

class LogitsBackend : public Backend {
 public:
  // Runs the step's forward pass and writes the logits of batch.logits_rows into `logits`
  // (logits_rows.size(), vocab_size()).
  virtual void forward(const StepBatch& batch, std::span<float> logits) = 0;
  virtual int64_t vocab_size() const = 0;

  // forward(), then each sampling row on the host from its logits row (none for a row
  // with a NaN, a +inf or no unmasked finite logit).
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override;

 private:
  std::vector<float> logits_;  // (logits_rows, vocab) of the last step
  Sampler sampler_;
};

}  // namespace pagedgen
