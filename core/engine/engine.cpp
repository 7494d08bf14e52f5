#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <unordered_map>

#include "engine/scheduler_figures.h"
#include "kv/kv_cache_manager.h"
#include "sample/rng.h"
#include "sample/sampler.h"
#include "sample/stop_checker.h"
#include "sched/prefix_planner.h"
#include "sched/scheduler.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// Decoding state of one sample, beside its Sequence in the scheduler.
struct SampleState {
  Rng rng;
  IncrementalDecoder decoder;
  StopChecker stop;
};

// A request while its samples run.
struct RequestState {
  const PreparedRequest* request;
  std::vector<std::optional<Completion>> choices;  // [n]
  int32_t num_finished = 0;
  int64_t cached_tokens = 0;
  bool forked = false;
  std::optional<RequestError> error;
};

// Builds the StepBatch of a schedule: new tokens of each sequence, their positions and
// slots, and the rows that need logits.
//   sequence s computes positions [c, c + n): token_ids[c..c+n) of the sequence;
//   slot of position p = table[p / block_size] * block_size + p % block_size
StepBatch build_step_batch(const SchedulerOutput& out, const Scheduler& scheduler, int32_t block_size) {
  StepBatch batch;
  batch.block_size = block_size;
  batch.num_seqs = static_cast<int32_t>(out.scheduled.size());
  const KvCacheManager& kv = scheduler.kv();
  for (const ScheduledSequence& s : out.scheduled)
    batch.max_blocks_per_seq = std::max<int32_t>(batch.max_blocks_per_seq,
                                                 static_cast<int32_t>(kv.block_table(s.seq_id).size()));
  batch.block_tables.assign(static_cast<std::size_t>(batch.num_seqs * batch.max_blocks_per_seq), 0);
  batch.query_start.push_back(0);
  for (std::size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledSequence& s = out.scheduled[i];
    const Sequence& seq = scheduler.sequence(s.seq_id);
    const std::span<const BlockId> table = kv.block_table(s.seq_id);
    std::copy(table.begin(), table.end(),
              batch.block_tables.begin() + static_cast<std::ptrdiff_t>(i * batch.max_blocks_per_seq));
    for (int32_t p = s.num_computed_tokens; p < s.num_computed_tokens + s.num_new_tokens; ++p) {
      batch.token_ids.push_back(seq.token_ids[static_cast<std::size_t>(p)]);
      batch.positions.push_back(p);
      batch.slot_mapping.push_back(static_cast<int64_t>(table[static_cast<std::size_t>(p / block_size)]) * block_size +
                                   p % block_size);
    }
    batch.query_start.push_back(static_cast<int32_t>(batch.token_ids.size()));
    batch.context_lens.push_back(s.num_computed_tokens + s.num_new_tokens);
    if (s.needs_logits) batch.logits_rows.push_back(static_cast<int32_t>(batch.token_ids.size()) - 1);
  }
  batch.num_tokens = static_cast<int32_t>(batch.token_ids.size());
  return batch;
}

}  // namespace

Engine::Engine(const EngineConfig& config, Backend& backend, const Tokenizer& tokenizer, int64_t vocab_size)
    : config_(config), backend_(backend), tokenizer_(tokenizer), vocab_size_(vocab_size) {
  backend_.allocate_kv_pool(static_cast<std::size_t>(config.num_blocks), static_cast<std::size_t>(config.block_size));
  stats_.backend = backend.name();
  stats_.block_size = config.block_size;
  stats_.kv_bytes_per_block = static_cast<int64_t>(backend.kv_bytes_per_block(static_cast<std::size_t>(config.block_size)));
  stats_.num_pool_blocks = config.num_blocks;
  stats_.max_model_len = config.max_model_len;
  stats_.prefix_sharing = config.prefix_sharing;
}

void Engine::run(std::vector<PreparedRequest> requests, const std::function<void(OutputRecord)>& on_done,
                 const std::function<void(const RunStats&)>& on_step) {
  using Clock = std::chrono::steady_clock;
  const auto run_start = Clock::now();

  // Plan: the depth-first order of the prompt trie.
  PrefixPlanner planner;
  for (const PreparedRequest& r : requests) planner.add(r.prompt_ids);
  const PrefixPlan plan = planner.plan(config_.block_size);
  stats_.num_distinct_prompt_tokens += plan.num_distinct_prompt_tokens;
  stats_.num_prefix_groups += plan.num_prefix_groups;

  Scheduler scheduler(SchedulerConfig{config_.max_num_seqs, config_.max_batch_tokens},
                      KvCacheConfig{config_.num_blocks, config_.block_size, config_.prefix_sharing});
  std::vector<RequestState> states(requests.size());
  std::unordered_map<uint64_t, std::unique_ptr<SampleState>> samples;
  uint64_t next_seq_id = 0;
  auto new_sample = [&](const PreparedRequest& r, int32_t sample_index) {
    const uint64_t seed = sample_seed(r.sampling.seed, config_.run_seed, r.seed_key, static_cast<uint64_t>(sample_index));
    return std::make_unique<SampleState>(SampleState{Rng(seed), IncrementalDecoder(tokenizer_, false, false),
                                                     StopChecker(r.sampling, tokenizer_.special().end_of_generation)});
  };
  for (int32_t request_index : plan.order) {
    const PreparedRequest& r = requests[static_cast<std::size_t>(request_index)];
    states[static_cast<std::size_t>(request_index)] =
        RequestState{&r, std::vector<std::optional<Completion>>(static_cast<std::size_t>(r.sampling.n)), 0, 0, false, {}};
    Sequence seq;
    seq.id = next_seq_id++;
    seq.request_index = request_index;
    seq.sample_index = 0;
    seq.token_ids = r.prompt_ids;
    seq.num_prompt_tokens = static_cast<int32_t>(r.prompt_ids.size());
    seq.max_tokens = r.sampling.max_tokens;
    samples.emplace(seq.id, new_sample(r, 0));
    scheduler.add(std::move(seq));
    ++stats_.num_samples;
  }

  auto finish_request_if_done = [&](RequestState& state) {
    const PreparedRequest& r = *state.request;
    if (state.num_finished < r.sampling.n) return;
    if (state.error) {
      on_done(*state.error);
      ++stats_.num_failed_requests;
      return;
    }
    RequestOutput output;
    output.index = r.index;
    output.id_json = r.id_json;
    output.prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
    output.cached_tokens = state.cached_tokens;
    for (auto& c : state.choices) output.choices.push_back(std::move(*c));
    stats_.num_prompt_tokens += output.prompt_tokens;
    on_done(std::move(output));
  };
  auto record_completion = [&](RequestState& state, int32_t sample_index, SampleState& sample,
                               int32_t num_cached_prompt_tokens) {
    if (sample_index == 0) state.cached_tokens = num_cached_prompt_tokens;
    sample.stop.append_held_back(sample.decoder.finish());
    state.choices[static_cast<std::size_t>(sample_index)] =
        Completion{sample.stop.text(), *sample.stop.finish_reason(), sample.stop.num_tokens()};
    ++state.num_finished;
    finish_request_if_done(state);
  };
  auto finish_sample = [&](uint64_t seq_id, SampleState& sample) {
    const Sequence seq = scheduler.finish(seq_id);
    record_completion(states[static_cast<std::size_t>(seq.request_index)], seq.sample_index, sample,
                      seq.num_cached_prompt_tokens);
    samples.erase(seq_id);
  };

  Sampler sampler;
  std::vector<float> logits;
  const auto vocab = static_cast<std::size_t>(vocab_size_);
  while (scheduler.has_unfinished()) {
    const auto step_start = Clock::now();
    SchedulerOutput out = scheduler.schedule();
    for (const RejectedSequence& rejected : out.rejected) {
      RequestState& state = states[static_cast<std::size_t>(rejected.sequence.request_index)];
      if (!state.error)
        state.error = RequestError{state.request->index, state.request->id_json, "request_too_large", rejected.reason};
      samples.erase(rejected.sequence.id);
      // A request with forked samples counts all of them: the ones not started are done too.
      state.num_finished += state.forked ? 1 : state.request->sampling.n;
      finish_request_if_done(state);
    }
    if (out.scheduled.empty()) continue;

    backend_.copy_blocks(out.block_copies);
    const StepBatch batch = build_step_batch(out, scheduler, config_.block_size);
    logits.resize(batch.logits_rows.size() * vocab);
    backend_.forward(batch, logits);
    scheduler.on_step_done(out);

    // The KV memory this step used: taken before finished samples give their blocks back.
    stats_.add_snapshot(take_kv_snapshot(scheduler, config_.max_model_len));

    bool any_prompt = false;
    std::size_t logits_row = 0;
    for (const ScheduledSequence& s : out.scheduled) {
      const Sequence& seq = scheduler.sequence(s.seq_id);
      if (s.num_computed_tokens < seq.num_prompt_tokens) any_prompt = true;
      if (!s.needs_logits) continue;
      const std::span<const float> row(logits.data() + logits_row * vocab, vocab);
      ++logits_row;
      RequestState& state = states[static_cast<std::size_t>(seq.request_index)];
      const PreparedRequest& r = *state.request;

      // Samples one token for sample `sample` whose sequence holds `num_tokens` tokens and
      // has generated `num_generated`; returns the token and whether the sample is done.
      auto sample_next = [&](SampleState& sample, int32_t num_tokens, int32_t num_generated) {
        const TokenId token = sampler.sample(row, r.sampling, num_generated, tokenizer_.special().end_of_generation,
                                             sample.rng);
        ++stats_.num_generated_tokens;
        std::optional<FinishReason> reason = sample.stop.append(token, sample.decoder.push(token));
        if (!reason && num_tokens + 1 >= config_.max_model_len) {
          sample.stop.finish_length();
          reason = FinishReason::kLength;
        }
        return std::pair{token, reason.has_value()};
      };

      // n > 1: the prompt's first logits also start the other samples; each one that goes on
      // forks the parent's blocks (its first token then goes into a copy of the shared
      // partial block: copy-on-write).
      if (!state.forked && r.sampling.n > 1 && seq.num_generated_tokens() == 0) {
        state.forked = true;
        for (int32_t i = 1; i < r.sampling.n; ++i) {
          std::unique_ptr<SampleState> sample = new_sample(r, i);
          ++stats_.num_samples;
          const auto [token, done] = sample_next(*sample, seq.num_tokens(), 0);
          if (done) {
            record_completion(state, i, *sample, seq.num_cached_prompt_tokens);
            continue;
          }
          Sequence child;
          child.id = next_seq_id++;
          child.request_index = seq.request_index;
          child.sample_index = i;
          child.token_ids = seq.token_ids;
          child.token_ids.push_back(token);
          child.num_prompt_tokens = seq.num_prompt_tokens;
          child.max_tokens = seq.max_tokens;
          samples.emplace(child.id, std::move(sample));
          scheduler.fork(s.seq_id, std::move(child));
        }
      }
      state.forked = true;
      SampleState& sample = *samples.at(s.seq_id);
      const auto [token, done] = sample_next(sample, seq.num_tokens(), seq.num_generated_tokens());
      if (done) {
        finish_sample(s.seq_id, sample);
      } else {
        scheduler.append_token(s.seq_id, token);
      }
    }

    const double step_seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    (any_prompt ? stats_.prefill_seconds : stats_.decode_seconds) += step_seconds;
    if (on_step) on_step(stats_);
  }

  add_scheduler_counters(scheduler, stats_);
  stats_.generate_seconds += std::chrono::duration<double>(Clock::now() - run_start).count();
}

}  // namespace pagedgen
