// The kernel that gives a step its overlap tokens (step/overlap_token.h): each
// listed token id is read from the previous step's sampled ids, still on the device, so a
// decode step can be queued before the step it follows has finished.
// CPU: SynchronousSteps::submit (backend/synchronous_steps.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "step/overlap_token.h"

namespace pagedgen::gpu {

struct OverlapTokenArgs {
  const OverlapToken* tokens;  // [num_overlap_tokens], on the device
  int32_t num_overlap_tokens;
  const int32_t* previous_tokens;  // the previous step's sampled ids; -1: no token
  int32_t* token_ids;              // [num_tokens] the step's input ids, filled in place
};

// token_ids[t.token_index] = previous_tokens[t.sampling_row], or kFailedRowInputToken for -1.
void launch_fill_overlap_tokens(const OverlapTokenArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
