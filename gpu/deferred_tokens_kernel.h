// The kernel that gives a step its deferred input tokens (step/deferred_token.h): each
// listed token id is read from the previous step's sampled ids, still on the device, so a
// decode step can be queued before the step it follows has finished.
// CPU: SynchronousSteps::submit (backend/synchronous_steps.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "step/deferred_token.h"

namespace pagedgen::gpu {

struct DeferredTokenArgs {
  const DeferredToken* deferred;   // [num_deferred], on the device
  int32_t num_deferred;
  const int32_t* previous_tokens;  // the previous step's sampled ids; -1: no token
  int32_t* token_ids;              // [num_tokens] the step's input ids, filled in place
};

// token_ids[d.token_index] = previous_tokens[d.sampling_row], or kFailedRowInputToken for -1.
void launch_fill_deferred_tokens(const DeferredTokenArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
