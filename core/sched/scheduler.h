// Scheduler: continuous batching over the KvCacheManager. It owns the Sequence records
// (waiting queue in planner order, running list in admission order) and decides, each
// step, which tokens of which sequences run; the engine runs them and reports back.
//
// One engine step:
//   out = scheduler.schedule();          // tokens per sequence, COW copies, preempted, rejected,
//                                        // and the StepBatch the backend runs
//   backend.copy_blocks(out.block_copies); backend.step(out.batch, ...)
//   scheduler.on_step_done(out);         // K/V written: advance counts, commit full blocks,
//                                        // let go of the blocks copied from
//   append_token / fork / finish          // for sequences whose scheduled chunk needs_logits
// Every sequence whose chunk needs_logits must get append_token (or finish) before the
// next schedule(): a running sequence always has a token left to compute.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "step/step_batch.h"
#include "kv/kv_cache_manager.h"
#include "sched/sequence.h"

namespace pagedgen {

// The defaults here are the only ones: EngineConfig and the CLI's --max-num-seqs and
// --max-batch-tokens take theirs from this struct.
struct SchedulerConfig {
  int32_t max_num_seqs = 64;        // running sequences at once (fork may exceed it; admission then waits)
  int32_t max_batch_tokens = 2048;  // tokens computed per step; longer prefills are chunked
  // Prompt positions scored per step (prompt_logprobs), at most: each needs a logits row of
  // vocab floats beside the max_num_seqs sampled ones, so this bounds the logits buffers
  // (512 x 49,152 x 4 B = 96 MiB on the default model, 256 MiB at a 128k vocabulary)
  // instead of max_batch_tokens rows; a scoring prefill is chunked to fit.
  int32_t max_prompt_logits_rows = 512;
};

struct ScheduledSequence {
  uint64_t seq_id = 0;
  int32_t num_computed_tokens = 0;  // first position computed this step
  int32_t num_new_tokens = 0;       // positions [num_computed_tokens, + num_new_tokens)
  bool needs_logits = false;        // the chunk reaches the last known token: sample after it
  // Set by build_step_batch: the chunk's rows in StepBatch::logits_rows start here: first
  // its scored prompt positions (Sequence::scores_prompt), then its last token's when
  // needs_logits.
  int32_t first_logits_row = 0;
  int32_t num_prompt_logits_rows = 0;  // positions p of the chunk with p + 1 < num_prompt_tokens
};

struct RejectedSequence {
  Sequence sequence;   // removed from the scheduler
  std::string reason;  // for the request's error line
};

struct SchedulerOutput {
  std::vector<ScheduledSequence> scheduled;  // running ones in admission order, then newly admitted
  std::vector<BlockCopy>
      block_copies;  // copy-on-write and partial prefix matches (each names its kind): run before the step, in order
  std::vector<uint64_t> preempted;         // back in the waiting queue, blocks freed
  std::vector<RejectedSequence> rejected;  // can never fit in the pool
  int32_t num_batched_tokens = 0;
  StepBatch batch;               // the scheduled chunks as the backend reads them
  bool computes_prompt = false;  // some chunk computes a prompt position
};

struct SchedulerCounters {
  int64_t num_steps = 0;  // schedule() calls
  int64_t num_preemptions = 0;
  int64_t num_recomputed_tokens = 0;       // tokens computed again after a preemption freed them
  int64_t num_computed_tokens = 0;         // all tokens whose K/V were computed
  int64_t num_computed_prompt_tokens = 0;  // ... at prompt positions (recompute included)
  int64_t num_rejected = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, const KvCacheConfig& kv_config);

  // Appends to the waiting queue. The sequence needs at least one token; its id must be new.
  void add(Sequence sequence);
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }

  SchedulerOutput schedule();
  // The step of `out` ran: every scheduled chunk's K/V are in the cache.
  void on_step_done(const SchedulerOutput& out);
  void append_token(uint64_t seq_id, TokenId token);
  // Sets the id of a token appended before its value was known (the engine's overlap:
  // engine.h). Only a token whose K/V are not computed yet may change.
  void set_token(uint64_t seq_id, int32_t position, TokenId token);
  // A new running sample sharing the parent's blocks. `child` carries id, request and sample
  // index and token_ids, which must agree with the parent's on its computed tokens.
  void fork(uint64_t parent_id, Sequence child);
  // Frees the sequence's blocks and hands its record back, status Finished.
  Sequence finish(uint64_t seq_id);

  const Sequence& sequence(uint64_t seq_id) const;
  const std::deque<uint64_t>& waiting() const { return waiting_; }
  const std::vector<uint64_t>& running() const { return running_; }
  const KvCacheManager& kv() const { return kv_; }
  const SchedulerCounters& counters() const { return counters_; }

 private:
  Sequence& at(uint64_t seq_id);
  // What a step may still take: tokens, and scored prompt positions.
  struct StepBudget {
    int32_t tokens = 0;
    int32_t prompt_logits_rows = 0;
  };
  // The tokens of `seq` to compute now from `begin`: as many as wanted while the budget's
  // prompt rows last (0: it waits for the next step); takes them from the budget.
  static int32_t take_chunk(const Sequence& seq, int32_t begin, int32_t num_wanted, StepBudget& budget);
  void schedule_running(SchedulerOutput& out, StepBudget& budget);
  void admit_waiting(SchedulerOutput& out, StepBudget& budget);
  void preempt_newest(SchedulerOutput& out);
  // Why the sequence can never fit, with the whole pool of each kind to itself; nullopt when it can.
  std::optional<std::string> why_never_fits(const Sequence& seq) const;
  void build_step_batch(SchedulerOutput& out) const;
  void add_logits_rows(ScheduledSequence& s, const Sequence& seq, StepBatch& batch) const;

  SchedulerConfig config_;
  KvCacheManager kv_;
  std::unordered_map<uint64_t, Sequence> sequences_;  // waiting and running
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_;
  uint64_t next_arrival_ = 0;
  SchedulerCounters counters_;
};

}  // namespace pagedgen
