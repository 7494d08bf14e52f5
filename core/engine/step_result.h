// What one engine step reports: the records of the requests that finished in it, and the
// requests that started in it (their first sample admitted for the first time), which a
// job journals so that a resumed run reports the cached tokens of the original start.
#pragma once

#include <cstdint>
#include <vector>

#include "io/output_record.h"

namespace pagedgen {

struct RequestStart {
  int64_t request_index = 0;             // position in the batch given to Engine::add_requests
  int32_t num_cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache at admission
};

struct StepResult {
  std::vector<OutputRecord> finished;  // any order
  std::vector<RequestStart> started;   // admission order
};

}  // namespace pagedgen
