// HostSampling: a step on the host from a LogitsBackend's logits: forward(), then each
// sampling row with the Sampler (sampler.h) from its logits row, its penalties and its
// grammar's mask (none for a row with a NaN, a +inf or no unmasked finite logit), and the
// log probabilities the row asks for (token_logprobs.h, from the model's logits row). The
// CPU backend's step. With a thread pool the rows are sampled in parallel, each by its
// thread's Sampler: a row's token depends on its logits, parameters, tokens and random
// bits alone, never on the thread.
#pragma once

#include <vector>

#include "backend/cpu_thread_pool.h"
#include "backend/logits_backend.h"
#include "sample/sampler.h"

namespace pagedgen {

class HostSampling {
 public:
  // `pool` (or none: one thread) must outlive this.
  explicit HostSampling(cpu::CpuThreadPool* pool = nullptr)
      : pool_(pool), samplers_(pool != nullptr ? pool->num_threads() : 1) {}

  std::vector<SampledToken> step(LogitsBackend& backend, const StepBatch& batch, const SamplingBatch& sampling);

 private:
  cpu::CpuThreadPool* pool_;
  std::vector<float> logits_;      // (logits_rows, vocab) of the last step
  std::vector<Sampler> samplers_;  // one per thread (each keeps scratch)
};

}  // namespace pagedgen
