// Engine: the one step loop. add_requests() plans a batch of prompts (prefix trie, depth
// first) and queues them; each step() schedules, runs the backend (forward + sample: token
// ids come back, never logits) and hands the ids to the output processor, which applies
// stops, forks n > 1 samples and finishes requests. `generate`, `sweep`, `plan` (on a
// backend that computes nothing) and `complete` all drive it the same way:
//
//   engine.add_requests(batch);
//   while (engine.has_unfinished()) for (OutputRecord& r : engine.step().finished) ...;
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "engine/engine_stats.h"
#include "engine/output_processor.h"
#include "engine/prepared_request.h"
#include "engine/step_result.h"
#include "engine/step_timings.h"
#include "io/output_record.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

struct EngineConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  int32_t max_num_seqs = 256;
  int32_t max_batch_tokens = 2048;
  bool prefix_sharing = true;
  int64_t max_model_len = 0;   // prompt + generated tokens of one sequence, at most
  uint64_t run_seed = 0;
};

class Engine {
 public:
  // `backend` must outlive the engine; its KV pool is allocated here. `tokenizer` decodes
  // the text and gives the end-of-generation ids; without one (a dry run) outputs carry
  // token ids only and samples end by length alone.
  Engine(const EngineConfig& config, Backend& backend, const Tokenizer* tokenizer);

  // Plans `requests` and queues them. Each batch starts from an empty prefix cache, so its
  // figures never depend on an earlier batch (a resumed job runs its window again whole).
  // The previous batch must be finished. With a tokenizer, a request whose response
  // format is constrained needs a backend that applies token masks (the job refuses it
  // otherwise: job/prompt_builder.h).
  void add_requests(std::vector<PreparedRequest> requests);
  bool has_unfinished() const { return scheduler_ && scheduler_->has_unfinished(); }

  // Runs one step; returns the records of the requests that finished in it and the
  // requests that started in it.
  StepResult step();

  // The figures of the finished batches and the steps of the current one.
  const EngineStats& stats() const { return stats_; }
  // stats() with the current batch's scheduler counters (prefix cache, copies, preemptions,
  // computed tokens), which are added to stats() only when a batch ends: the figures of a
  // run stopped mid-batch.
  EngineStats stats_so_far() const;
  // Where the host time of the last step() went, by phase (benchmarks).
  const StepTimings& last_step_timings() const { return last_step_timings_; }
  // The batch's scheduler, for tests that check its invariants between steps.
  const Scheduler& scheduler() const { return *scheduler_; }

 private:
  void end_batch();

  EngineConfig config_;
  Backend& backend_;
  bool uses_grammars_;  // a tokenizer was given: constrained response formats get masks
  OutputProcessor output_;
  std::unique_ptr<Scheduler> scheduler_;  // of the current batch
  EngineStats stats_;
  StepTimings last_step_timings_;
};

}  // namespace pagedgen
