// LogitsBackend: a Backend that computes logits (the CPU and CUDA backends). forward()
// alone serves the tests that compare logits across backends and references; how a step
// turns logits into token ids is each backend's own: the CPU backend samples on the host
// (host_sampling.h), the CUDA backend on the device.
#pragma once

#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace pagedgen {

class LogitsBackend : public Backend {
 public:
  // Runs the step's forward pass and writes the logits of batch.logits_rows into `logits`
  // (logits_rows.size(), vocab_size()).
  virtual void forward(const StepBatch& batch, std::span<float> logits) = 0;
  virtual int64_t vocab_size() const = 0;
};

}  // namespace pagedgen
