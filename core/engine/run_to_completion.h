// The step loop for callers that want only the finished records (sweep, plan, complete and
// the tests): the batch job (job/window_runner.cpp) runs its own, to write lines and
// journal as steps finish.
#pragma once

#include <vector>

#include "engine/engine.h"

namespace pagedgen {

// Steps `engine` until nothing it holds is unfinished; returns the finished records in the
// order the steps gave them (ask record_index for input order).
std::vector<OutputRecord> run_to_completion(Engine& engine);

}  // namespace pagedgen
