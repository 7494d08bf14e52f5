#include "engine/dry_run.h"

#include "engine/scheduler_figures.h"
#include "sched/prefix_planner.h"
#include "sched/scheduler.h"

namespace pagedgen {

namespace {

TokenId generated_token(uint64_t seq_id, int32_t position) {
  // Negative, and distinct for every (sequence, position) while ids stay below 2^40.
  const uint64_t code = (seq_id * 1000003ULL + static_cast<uint64_t>(position)) % (1ULL << 30);
  return -1 - static_cast<TokenId>(code);
}

}  // namespace

DryRunResult dry_run(const EngineConfig& config, const std::vector<PreparedRequest>& requests) {
  DryRunResult result;
  RunStats& stats = result.stats;
  stats.block_size = config.block_size;
  stats.num_pool_blocks = config.num_blocks;
  stats.max_model_len = config.max_model_len;
  stats.prefix_sharing = config.prefix_sharing;

  PrefixPlanner planner;
  for (const PreparedRequest& r : requests) planner.add(r.prompt_ids);
  const PrefixPlan plan = planner.plan(config.block_size);
  stats.num_distinct_prompt_tokens = plan.num_distinct_prompt_tokens;
  stats.num_prefix_groups = plan.num_prefix_groups;

  Scheduler scheduler(SchedulerConfig{config.max_num_seqs, config.max_batch_tokens},
                      KvCacheConfig{config.num_blocks, config.block_size, config.prefix_sharing});
  uint64_t next_seq_id = 0;
  for (int32_t request_index : plan.order) {
    const PreparedRequest& r = requests[static_cast<std::size_t>(request_index)];
    Sequence seq;
    seq.id = next_seq_id++;
    seq.request_index = request_index;
    seq.token_ids = r.prompt_ids;
    seq.num_prompt_tokens = static_cast<int32_t>(r.prompt_ids.size());
    seq.max_tokens = r.sampling.max_tokens;
    scheduler.add(std::move(seq));
    ++stats.num_samples;
  }

  // Whether a sample whose sequence holds num_tokens tokens, num_generated of them
  // generated, is done after one more token (as the engine's length checks decide).
  const auto done_after_next = [&](int32_t num_tokens, int32_t num_generated, int32_t max_tokens) {
    return num_generated + 1 >= max_tokens || num_tokens + 1 >= config.max_model_len;
  };
  std::vector<bool> rejected(requests.size(), false);
  while (scheduler.has_unfinished()) {
    SchedulerOutput out = scheduler.schedule();
    for (const RejectedSequence& r : out.rejected) {
      const auto request_index = static_cast<std::size_t>(r.sequence.request_index);
      if (rejected[request_index]) continue;
      rejected[request_index] = true;
      result.rejected.push_back({requests[request_index].index, requests[request_index].id_json, r.reason});
    }
    if (out.scheduled.empty()) continue;
    scheduler.on_step_done(out);
    stats.add_snapshot(take_kv_snapshot(scheduler, config.max_model_len));
    for (const ScheduledSequence& s : out.scheduled) {
      if (!s.needs_logits) continue;
      const Sequence& seq = scheduler.sequence(s.seq_id);
      const PreparedRequest& r = requests[static_cast<std::size_t>(seq.request_index)];
      const int32_t num_generated = seq.num_generated_tokens();
      // n > 1: the first token of sample 0 also starts the others, which fork its blocks.
      if (seq.sample_index == 0 && num_generated == 0) {
        for (int32_t k = 1; k < r.sampling.n; ++k) {
          ++stats.num_samples;
          ++stats.num_generated_tokens;
          if (done_after_next(seq.num_tokens(), 0, r.sampling.max_tokens)) continue;
          Sequence child;
          child.id = next_seq_id++;
          child.request_index = seq.request_index;
          child.sample_index = k;
          child.token_ids = seq.token_ids;
          child.token_ids.push_back(generated_token(child.id, seq.num_tokens()));
          child.num_prompt_tokens = seq.num_prompt_tokens;
          child.max_tokens = seq.max_tokens;
          scheduler.fork(s.seq_id, std::move(child));
        }
      }
      ++stats.num_generated_tokens;
      if (done_after_next(seq.num_tokens(), num_generated, r.sampling.max_tokens)) {
        scheduler.finish(s.seq_id);
      } else {
        scheduler.append_token(s.seq_id, generated_token(s.seq_id, seq.num_tokens()));
      }
    }
  }

  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (rejected[i]) continue;
    stats.num_prompt_tokens += std::ssize(requests[i].prompt_ids);
  }
  stats.num_failed_requests = std::ssize(result.rejected);
  add_scheduler_counters(scheduler, stats);
  return result;
}

}  // namespace pagedgen
