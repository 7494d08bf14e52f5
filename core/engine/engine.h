// Engine: the one step loop. add_requests() plans a batch of prompts (prefix trie, depth
// first) and queues them; each step() schedules, runs the backend (forward + sample: token
// ids come back, never logits) and hands the ids to the output processor, which applies
// stops, forks n > 1 samples and finishes requests. `generate`, `sweep`, `plan` (on a
// backend that computes nothing) and `complete` all drive it the same way:
//
//   engine.add_requests(batch);
//   while (engine.has_unfinished()) for (OutputRecord& r : engine.step().finished) ...;
//
// (run_to_completion.h is that loop for callers that want only the records.)
//
// The overlap (EngineConfig::overlap): when no token of step N can change what the
// scheduler does next (OutputProcessor::can_overlap: no row can stop by its value, no
// grammar, no fork, no penalty reading the sequence's tokens), step N is applied without
// its ids (overlapped), and the next step() schedules and submits step N+1 before it waits
// for them, so a GPU runs N+1 right after N while the host applies N's ids (text, stop
// strings, records) and the job writes its lines:
//
//   step() k:  schedule(k)  sampling batch(k)  submit(k)  | collect(k-1) finish overlap(k-1) |
//              on_step_done(k)  KV figures(k)  start overlap(k), or collect(k) + apply(k)
//
// Otherwise step N's ids are collected at the end of its own step(). Either way the
// scheduler gets the same calls in the same order, so outputs and figures are the same
// with the overlap on and off; a record may come out one step() later with it on.
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
#include "util/stop_token.h"

namespace pagedgen {

struct EngineConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;  // the KV pool over all layers; with window layers split among the kinds (split_kv_pool)
  int32_t max_num_seqs = SchedulerConfig{}.max_num_seqs;
  int32_t max_batch_tokens = SchedulerConfig{}.max_batch_tokens;
  bool prefix_sharing = true;
  int64_t max_model_len = 0;  // prompt + generated tokens of one sequence, at most
  uint64_t run_seed = 0;
  bool overlap = true;  // prepare step N+1 while step N runs, where nothing depends on N's ids
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
  // otherwise: job/prompt_builder.h). Throws Stopped when `stop` asks while the batch is
  // planned or its grammars compile; no batch is queued then.
  void add_requests(std::vector<PreparedRequest> requests, const StopToken& stop = {});
  bool has_unfinished() const { return scheduler_ && (scheduler_->has_unfinished() || output_.has_overlapped_step()); }

  // Runs one step; returns the records of the requests whose last token it applied and the
  // requests that started in it. With the overlap, the last step() of a batch may schedule
  // nothing and only apply the ids of the step before.
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
  // Applies the overlapped step's ids, when a step was overlapped.
  void finish_overlap();

  EngineConfig config_;
  Backend& backend_;
  std::vector<int32_t> kind_windows_;     // [num_kinds] the backend's layer kinds, kind 0 (window 0) first
  std::vector<int32_t> kind_num_blocks_;  // [num_kinds] each kind's pool
  bool uses_grammars_;                    // a tokenizer was given: constrained response formats get masks
  EngineStats stats_;                     // (before output_, which counts into it)
  OutputProcessor output_;
  std::unique_ptr<Scheduler> scheduler_;  // of the current batch
  StepTimings last_step_timings_;
};

}  // namespace pagedgen
