// The scheduler's figures as EngineStats keeps them: what the KV cache holds after a step, and
// the counters of a finished run. Shared by the engine and the dry run of `plan`.
#pragma once

#include <cstdint>

#include "engine/engine_stats.h"
#include "sched/scheduler.h"

namespace pagedgen {

// Counts blocks in use, slots allocated and holding a token, each sequence's own view,
// shared blocks, and what naive reservation (max_model_len, or prompt + max_tokens, per
// sequence holding KV) would need at this moment.
KvSnapshot take_kv_snapshot(const Scheduler& scheduler, int64_t max_model_len);

// Adds the run's prefix-cache, copy, preemption and computed-prompt counters to `stats`.
void add_scheduler_counters(const Scheduler& scheduler, EngineStats& stats);

}  // namespace pagedgen
