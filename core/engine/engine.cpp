#include "engine/engine.h"

#include <chrono>

#include "engine/scheduler_figures.h"
#include "sched/prefix_planner.h"
#include "util/error.h"

namespace pagedgen {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Adds the time since `since` to `seconds`; returns now, where the next phase starts.
Clock::time_point lap(Clock::time_point since, double& seconds) {
  const auto now = Clock::now();
  seconds += std::chrono::duration<double>(now - since).count();
  return now;
}

}  // namespace

Engine::Engine(const EngineConfig& config, Backend& backend, const Tokenizer* tokenizer)
    : config_(config),
      backend_(backend),
      uses_grammars_(tokenizer != nullptr),
      output_(tokenizer, config.run_seed, config.max_model_len, stats_) {
  const auto block_size = static_cast<std::size_t>(config.block_size);
  kind_windows_ = backend.kv_kind_windows();
  std::vector<std::size_t> kind_bytes;
  for (std::size_t kind = 0; kind < kind_windows_.size(); ++kind)
    kind_bytes.push_back(backend.kv_kind_bytes_per_block(static_cast<KvKindId>(kind), block_size));
  kind_num_blocks_ = split_kv_pool(config.num_blocks, backend.kv_bytes_per_block(block_size), kind_windows_, kind_bytes,
                                   config.block_size, config.max_num_seqs, config.max_batch_tokens);
  if (kind_windows_.size() == 1) {
    backend_.allocate_kv_pool(static_cast<std::size_t>(config.num_blocks), block_size);
  } else {
    backend_.allocate_kv_pools(kind_num_blocks_, block_size);
    for (std::size_t kind = 0; kind < kind_windows_.size(); ++kind)
      stats_.kinds.push_back(KvKindFigures{.window = kind_windows_[kind],
                                           .kv_bytes_per_block = static_cast<int64_t>(kind_bytes[kind]),
                                           .num_pool_blocks = kind_num_blocks_[kind]});
  }
  stats_.backend = backend.name();
  stats_.block_size = config.block_size;
  stats_.kv_bytes_per_block = static_cast<int64_t>(backend.kv_bytes_per_block(block_size));
  stats_.num_pool_blocks = kind_num_blocks_.front();
  stats_.max_model_len = config.max_model_len;
  stats_.prefix_sharing = config.prefix_sharing;
}

void Engine::add_requests(std::vector<PreparedRequest> requests, const StopToken& stop) {
  PG_CHECK(!has_unfinished(), "add_requests before the last batch finished");
  if (uses_grammars_ && !backend_.applies_token_masks())
    for (const PreparedRequest& r : requests)
      PG_CHECK(!r.sampling.response_format.is_constrained(),
               "line {} needs token masks, which the {} backend does not "
               "apply",
               r.index + 1, backend_.name());
  const auto start = Clock::now();
  PrefixPlanner planner;
  StopPoll poll(stop);
  for (const PreparedRequest& r : requests) {
    poll.tick();
    planner.add(r.prompt_ids);
  }
  const PrefixPlan plan = planner.plan(config_.block_size);
  stop.throw_if_stopped();
  KvCacheConfig kv_config{.num_blocks = kind_num_blocks_.front(),
                          .block_size = config_.block_size,
                          .enable_prefix_caching = config_.prefix_sharing};
  for (std::size_t kind = 1; kind < kind_windows_.size(); ++kind)
    kv_config.window_kinds.push_back({.window = kind_windows_[kind], .num_blocks = kind_num_blocks_[kind]});
  scheduler_ = std::make_unique<Scheduler>(SchedulerConfig{config_.max_num_seqs, config_.max_batch_tokens}, kv_config);
  output_.start_batch(std::move(requests), plan.order, *scheduler_, stop);
  stats_.num_distinct_prompt_tokens += plan.num_distinct_prompt_tokens;
  stats_.num_prefix_groups += plan.num_prefix_groups;
  stats_.generate_seconds += seconds_since(start);
  if (!has_unfinished()) end_batch();
}

// schedule -> submit -> (the ids of the step before, when it was overlapped) -> KV
// bookkeeping -> overlap this step, or wait for its ids and apply them.
StepResult Engine::step() {
  PG_CHECK(has_unfinished(), "step with nothing to run");
  const auto start = Clock::now();
  last_step_timings_ = StepTimings{};
  StepTimings& t = last_step_timings_;
  StepResult result;
  if (!scheduler_->has_unfinished()) {  // only the last step's ids are left
    finish_overlap();
    result.finished = output_.take_records();
    stats_.generate_seconds += seconds_since(start);
    end_batch();
    return result;
  }
  const SchedulerOutput out = scheduler_->schedule();
  auto phase_start = lap(start, t.schedule_seconds);
  output_.reject(out.rejected);
  if (out.scheduled.empty()) {
    finish_overlap();
  } else {
    output_.note_starts(out, result.started);
    const SamplingBatch sampling = output_.sampling_batch(out);
    const std::vector<OverlapToken> overlap_tokens = output_.overlap_tokens(out);
    phase_start = lap(phase_start, t.sampling_batch_seconds);
    backend_.copy_blocks(out.block_copies);
    backend_.submit(out.batch, sampling, overlap_tokens);
    phase_start = lap(phase_start, t.submit_seconds);
    // While this step runs: the ids of the one before, which its K/V bookkeeping needs (the
    // prefix cache keys blocks by their tokens).
    finish_overlap();
    phase_start = Clock::now();
    scheduler_->on_step_done(out);
    // The KV memory this step used: taken before finished samples give their blocks back.
    stats_.add_snapshot(take_kv_snapshot(*scheduler_, config_.max_model_len));
    phase_start = lap(phase_start, t.step_done_seconds);
    if (config_.overlap && output_.can_overlap()) {
      output_.start_overlap();
      t.overlapped = true;
      lap(phase_start, t.output_seconds);
    } else {
      const std::vector<SampledToken> tokens = backend_.collect();
      phase_start = lap(phase_start, t.wait_seconds);
      output_.apply(tokens);
      lap(phase_start, t.output_seconds);
    }
    t.computes_prompt = out.computes_prompt;
    const double seconds = seconds_since(start);
    (out.computes_prompt ? stats_.prefill_seconds : stats_.decode_seconds) += seconds;
  }
  result.finished = output_.take_records();
  stats_.generate_seconds += seconds_since(start);
  if (!has_unfinished()) end_batch();
  return result;
}

void Engine::finish_overlap() {
  if (!output_.has_overlapped_step()) return;
  auto phase_start = Clock::now();
  const std::vector<SampledToken> tokens = backend_.collect();
  phase_start = lap(phase_start, last_step_timings_.wait_seconds);
  output_.finish_overlap(tokens);
  lap(phase_start, last_step_timings_.overlap_output_seconds);
}

EngineStats Engine::stats_so_far() const {
  EngineStats stats = stats_;
  if (has_unfinished()) add_scheduler_counters(*scheduler_, stats);
  return stats;
}

void Engine::end_batch() { add_scheduler_counters(*scheduler_, stats_); }

}  // namespace pagedgen
