// Sequence: one sample of one request as the scheduler and the engine see it: its token
// ids (prompt, then generated) and how many of them have K/V in the cache. Block tables
// live in the KvCacheManager, sampling state beside it in the engine, both keyed by id.
#pragma once

#include <cstdint>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

enum class SequenceStatus : uint8_t { Waiting, Running, Finished };

struct Sequence {
  uint64_t id = 0;
  int64_t request_index = 0;       // the engine's request (input line) this sample belongs to
  int32_t sample_index = 0;        // 0..n-1 for n samples of one request
  std::vector<TokenId> token_ids;  // prompt, then generated tokens
  int32_t num_prompt_tokens = 0;
  // prompt_logprobs: logits at every prompt position, so the prompt is computed whole,
  // never read from the prefix cache (scheduler.h).
  bool scores_prompt = false;
  int32_t max_tokens = 0;           // the request's max_tokens (for the naive-reservation figures)
  int32_t num_computed_tokens = 0;  // leading tokens whose K/V are in the cache
  SequenceStatus status = SequenceStatus::Waiting;
  uint64_t arrival_order = 0;  // set by Scheduler::add; forked children take the parent's

  // Scheduler bookkeeping.
  int32_t num_cached_prompt_tokens = 0;  // prompt tokens served by the prefix cache at first admission
  int32_t num_preemptions = 0;
  int32_t num_computed_before_preemption = 0;  // computing tokens below this again is recompute

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  int32_t num_generated_tokens() const { return num_tokens() - num_prompt_tokens; }
};

}  // namespace pagedgen
