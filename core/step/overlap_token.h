// OverlapToken: an input token of a step whose id is not known when the step is submitted,
// because the step before it (still running) samples it. The backend reads it from that
// step's results: on a GPU without the id ever reaching the host first.
//
//   step N   sampling rows [ r0 r1 r2 ]            (N's ids, still on the device)
//   step N+1 token_ids     [ x  ?  y  ? ]          overlap tokens {1, r2}, {3, r0}
#pragma once

#include <cstdint>

#include "step/ids.h"

namespace pagedgen {

struct OverlapToken {
  int32_t token_index = 0;   // into the StepBatch's token_ids
  int32_t sampling_row = 0;  // into the previous step's SamplingBatch rows
};

// The id an overlap token takes when its row gave no token (unusable logits): any id in
// the vocabulary, so the step stays well formed; the engine records the same id in the
// sequence, whose sample has already failed.
inline constexpr TokenId kFailedRowInputToken = 0;

}  // namespace pagedgen
