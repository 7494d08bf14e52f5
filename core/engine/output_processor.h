// OutputProcessor: the engine's bookkeeping around the scheduler, per request and per
// sample. Before a step it lists what to sample (one row per sample to extend; the first
// logits of an n > 1 prompt start all n samples, each from its own random stream and with
// its own grammar matcher); after the step it applies the token ids: grammar advance, stop
// checks and text, fork of the new samples, finished samples, and a request's record once
// all its samples are done.
//
// Log probabilities: a sample whose request asks keeps one entry per generated token (the
// backend's values, the tokens' bytes, where the token's text starts in the decoded text,
// in characters), moved into its Completion when it ends.
//
// Structured outputs: a sample whose response format is constrained keeps a GrammarMatcher
// (through preemption too) and the mask of the tokens it allows next, refilled after each
// token, so a mask depends only on the sample's own tokens. A token after which nothing
// but the end may follow ends the sample at once ("stop").
//
// Applying ahead (the engine's overlap, engine.h): when no row of a step can change what
// the scheduler does next by the value of its token (output_processor_ahead.cpp says which
// can), apply_ahead() applies the step before its tokens are known: each sample that goes
// on gets a placeholder token, which the next step reads as a DeferredToken, and each that
// ends by length ends now. apply_deferred() then applies the tokens (text, stops, records)
// while the next step runs. Either way the scheduler sees the same calls in the same order.
//
// A row with no token (unusable logits) fails its sample; its sequence ends where the
// scheduler would see it end had the row given a token: at once if it ended by length,
// else after one more step (its token kFailedRowInputToken, that step's row discarded),
// since with the overlap that step is already scheduled when the failure is known.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/grammar_cache.h"
#include "engine/prepared_request.h"
#include "engine/step_result.h"
#include "grammar/grammar_matcher.h"
#include "io/output_record.h"
#include "sample/rng.h"
#include "sample/sampling_batch.h"
#include "sample/stop_checker.h"
#include "sched/scheduler.h"
#include "step/deferred_token.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class OutputProcessor {
 public:
  // `tokenizer` null: no text and no grammar (dry runs); samples then end by length only.
  OutputProcessor(const Tokenizer* tokenizer, uint64_t run_seed, int64_t max_model_len);

  // Takes a batch's requests and queues their first samples in `order` (the plan's).
  void start_batch(std::vector<PreparedRequest> requests, std::span<const int32_t> order, Scheduler& scheduler,
                   EngineStats& stats);

  // The requests the scheduler turned away: one error record each, once all their samples
  // are accounted for.
  void reject(std::span<const RejectedSequence> rejected, std::vector<OutputRecord>& done, EngineStats& stats);

  // Adds to `started` the requests whose first sample `out` admits for the first time.
  void note_starts(const SchedulerOutput& out, const Scheduler& scheduler, std::vector<RequestStart>& started);

  // The rows to sample after the step of `out` (draws each sample's random bits).
  SamplingBatch sampling_batch(const SchedulerOutput& out, const Scheduler& scheduler);

  // Applies the step's token ids (one per row of the last sampling_batch()). A row with no
  // token (unusable logits) fails its sample, and its request becomes an error record.
  void apply(std::span<const SampledToken> tokens, Scheduler& scheduler, std::vector<OutputRecord>& done,
             EngineStats& stats);

  // Whether the rows of the last sampling_batch() may be applied ahead of their tokens: no
  // token value could end a sample or start one (stop ids, stop strings, grammars, forks).
  bool can_apply_ahead() const;
  // Applies the last sampling_batch()'s rows without their tokens; they wait for
  // apply_deferred().
  void apply_ahead(Scheduler& scheduler);
  // A step was applied ahead and its ids are not applied yet (it may have no rows: a
  // chunk of a prefill samples nothing, yet its ids, none, are collected in turn).
  bool has_step_ahead() const { return step_ahead_; }
  // The input tokens of `out` that are placeholders of rows applied ahead.
  std::vector<DeferredToken> deferred_tokens(const SchedulerOutput& out) const;
  // The tokens of the rows applied ahead (one per row, in order).
  void apply_deferred(std::span<const SampledToken> tokens, Scheduler& scheduler, std::vector<OutputRecord>& done,
                      EngineStats& stats);

 private:
  // Decoding state of one sample, beside its Sequence in the scheduler.
  struct SampleState {
    Rng rng;
    std::optional<IncrementalDecoder> decoder;  // none without a tokenizer
    StopChecker stop;
    std::optional<GrammarMatcher> grammar;      // a constrained response format's
    std::vector<uint32_t> allowed_tokens;       // grammar's mask for the next token (token_bitmask.h)
    std::vector<GeneratedTokenLogprobs> logprobs;  // [generated] when the request asks for them
    int64_t num_text_chars = 0;                 // characters the decoder gave so far
    bool failed = false;  // a row gave no token; its sequence runs one last step, unsampled
  };
  // A request while its samples run.
  struct RequestState {
    std::vector<std::optional<Completion>> choices;  // [n]
    int32_t num_finished = 0;
    int64_t cached_tokens = 0;
    bool forked = false;
    bool started = false;
    std::optional<RequestError> error;
  };
  // What one sampling row extends: a running sample, or a sample of a fork not yet created.
  struct PlannedRow {
    uint64_t seq_id = 0;                  // the running sequence whose logits it reads
    std::unique_ptr<SampleState> child;   // set for a new sample of an n > 1 fork
    int32_t child_index = 0;              // its sample index
    int64_t request_index = 0;
    int32_t num_tokens = 0;               // the sequence's tokens when planned: the new one goes here
    std::optional<Sequence> finished;     // applied ahead: the sequence it ended (by length)
    bool discarded = false;               // a failed sample's last step: no token to apply
  };

  std::unique_ptr<SampleState> new_sample(const PreparedRequest& request, int32_t sample_index);
  // Records the token (a row's with an id); true when the sample is done.
  bool extend(SampleState& sample, const SampledToken& sampled, int32_t num_tokens, EngineStats& stats) const;
  void record_logprobs(SampleState& sample, TokenId token, const TokenLogprobs& logprobs) const;
  // Whether the sample ends at its next token whatever it is (max_tokens, the model's length).
  bool ends_by_length(const PlannedRow& row, const SampleState& sample) const;
  // Ends a sample whose sequence `seq_id` ran its last step (see the header: failed rows).
  void end_failed_sequence(uint64_t seq_id, Scheduler& scheduler);
  // Moves the sample's grammar past `token` and fills its next mask; true when nothing but
  // the end may follow (the value is closed).
  bool advance_grammar(SampleState& sample, TokenId token) const;
  void complete_sequence(const Sequence& finished, TokenId last, SampleState& sample, std::vector<OutputRecord>& done,
                         EngineStats& stats);
  void complete_sample(int64_t request_index, int32_t sample_index, SampleState& sample,
                       std::vector<TokenId> token_ids, int32_t num_cached_prompt_tokens,
                       std::vector<OutputRecord>& done, EngineStats& stats);
  void finish_request_if_done(int64_t request_index, std::vector<OutputRecord>& done, EngineStats& stats);
  // Fails the row's sample (the request's error record); the caller ends its sequence.
  void fail_row(PlannedRow& row, std::vector<OutputRecord>& done, EngineStats& stats);
  void start_child(const Sequence& parent, PlannedRow& row, const SampledToken& sampled, Scheduler& scheduler,
                   std::vector<OutputRecord>& done, EngineStats& stats);

  const Tokenizer* tokenizer_;
  std::optional<GrammarCache> grammars_;   // with a tokenizer
  std::vector<TokenId> end_of_generation_;
  uint64_t run_seed_;
  int64_t max_model_len_;
  std::vector<PreparedRequest> requests_;  // the batch, input order
  std::vector<RequestState> states_;       // [requests_]
  std::unordered_map<uint64_t, std::unique_ptr<SampleState>> samples_;  // by sequence id
  std::vector<PlannedRow> planned_;        // the rows of the last sampling_batch()
  std::vector<PlannedRow> ahead_;          // rows applied ahead, waiting for their tokens
  bool step_ahead_ = false;                // a step applied ahead, ids not applied
  uint64_t next_seq_id_ = 0;
};

}  // namespace pagedgen
