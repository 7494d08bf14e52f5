#include "job/plan_job.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "backend/dry_run_backend.h"
#include "engine/run_to_completion.h"

namespace pagedgen {

namespace {

// One block size: the engine's loop on a backend that computes nothing, every sample
// generating its max_tokens.
PlanRow plan_block_size(const PlanSettings& settings, const LoadedInput& input, const Backend& sizing,
                        int32_t block_size) {
  PlanRow row;
  row.block_size = block_size;
  row.kv_bytes_per_block = sizing.kv_bytes_per_block(static_cast<std::size_t>(block_size));
  EngineConfig config = settings.engine;
  config.block_size = block_size;
  config.num_blocks = sizing.kv_pool_blocks(settings.pool_budget, static_cast<std::size_t>(block_size));
  DryRunBackend backend(sizing);
  Engine engine(config, backend, nullptr);
  engine.add_requests(input.requests);
  for (OutputRecord& record : run_to_completion(engine))
    if (auto* error = std::get_if<RequestError>(&record)) row.rejected.push_back(std::move(*error));
  std::ranges::sort(row.rejected, {}, &RequestError::index);
  row.stats = engine.stats();
  return row;
}

}  // namespace

bool PlanResult::all_requests_fit() const {
  return std::ranges::all_of(rows, [](const PlanRow& r) { return r.rejected.empty(); });
}

PlanResult plan_block_sizes(const PlanSettings& settings, const LoadedInput& input, const Backend& sizing) {
  PlanResult result;
  result.kv_bytes_per_token = sizing.kv_bytes_per_block(1);
  for (int32_t block_size : settings.block_sizes)
    result.rows.push_back(plan_block_size(settings, input, sizing, block_size));
  return result;
}

}  // namespace pagedgen
