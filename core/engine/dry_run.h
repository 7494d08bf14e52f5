// dry_run: the engine's scheduling without a model, for `pagedgen plan`. The prompts are
// planned (prefix trie), admitted, chunked, shared, preempted and rejected exactly as
// `generate` would, but nothing is computed: every sample "generates" exactly its
// max_tokens tokens (or stops at max_model_len), the most KV memory the run can need, since
// an end-of-generation token can only end a sample earlier.
//
// Generated token ids are negative and distinct per (sample, position), so they never
// match a prompt, another sample, or each other in the prefix cache.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/run_stats.h"

namespace pagedgen {

// A request that cannot run even alone in the pool.
struct DryRunRejection {
  uint64_t index = 0;                  // input line
  std::optional<std::string> id_json;
  std::string reason;
};

struct DryRunResult {
  RunStats stats;  // the KV, token and step figures; times stay 0
  std::vector<DryRunRejection> rejected;
};

DryRunResult dry_run(const EngineConfig& config, const std::vector<PreparedRequest>& requests);

}  // namespace pagedgen
