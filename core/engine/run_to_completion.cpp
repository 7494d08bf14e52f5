#include "engine/run_to_completion.h"

#include <iterator>

namespace pagedgen {

std::vector<OutputRecord> run_to_completion(Engine& engine) {
  std::vector<OutputRecord> records;
  while (engine.has_unfinished()) {
    StepResult result = engine.step();
    records.insert(records.end(), std::make_move_iterator(result.finished.begin()),
                   std::make_move_iterator(result.finished.end()));
  }
  return records;
}

}  // namespace pagedgen
