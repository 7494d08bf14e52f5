// The plan job (`pagedgen plan`): a dry run of the whole input at each block size. The
// engine's own step loop runs on a DryRunBackend standing for `sizing` (the backend a real
// run would use: its KV bytes, layer kinds and pool), which computes nothing, so with no
// tokenizer every sample generates its max_tokens: the most KV memory the run can need.
//
//   PlanResult plan = plan_block_sizes(settings, input, sizing);
//   plan.rows[k].stats       block size k's figures (peak blocks, naive reservation, ...)
//   plan.rows[k].rejected    the requests that cannot fit in its pool even alone
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_pool_budget.h"
#include "engine/engine.h"
#include "engine/engine_stats.h"
#include "io/output_record.h"
#include "job/input_loader.h"

namespace pagedgen {

struct PlanSettings {
  std::vector<int32_t> block_sizes;  // planned in this order
  EngineConfig engine;               // block_size and num_blocks are each size's
  KvPoolBudget pool_budget;          // each size's pool: as many blocks as `sizing` gives for it
};

struct PlanRow {
  int32_t block_size = 0;
  std::size_t kv_bytes_per_block = 0;  // over every layer
  EngineStats stats;                   // times stay 0
  std::vector<RequestError> rejected;  // requests that cannot fit even alone, in input order

  bool fits() const { return stats.preemptions == 0 && rejected.empty(); }
};

struct PlanResult {
  std::size_t kv_bytes_per_token = 0;  // over every layer
  std::vector<PlanRow> rows;           // one per block size, in the settings' order

  // No request is too large for its pool at any block size (preemption allowed).
  bool all_requests_fit() const;
};

// Plans `input` at each block size; `sizing` is only asked for sizes.
PlanResult plan_block_sizes(const PlanSettings& settings, const LoadedInput& input, const Backend& sizing);

}  // namespace pagedgen
