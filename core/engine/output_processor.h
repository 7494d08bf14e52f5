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
// but the end may follow ends the sample at once ("stop"). allowed_token_ids is a mask too,
// the request's, intersected with the grammar's (or alone without one).
//
// Text: each sample's IncrementalDecoder writes control tokens' text only when the request
// turns skip_special_tokens off; its StopChecker keeps or cuts stop strings.
//
// The overlap (the engine's, engine.h): when no row of a step can change what the
// scheduler does next by the value of its token (output_processor_overlap.cpp says which
// can), start_overlap() applies the step before its tokens are known: each sample that
// goes on gets a placeholder token, which the next step reads as an OverlapToken, and each
// that ends by length ends now. finish_overlap() then applies the tokens (text, stops,
// records) while the next step runs. Either way the scheduler sees the same calls in the
// same order.
//
// A row with no token (unusable logits) fails its sample; its sequence ends where the
// scheduler would see it end had the row given a token: at once if it ended by length,
// else after one more step (its token kFailedRowInputToken, that step's row discarded),
// since with the overlap that step is already scheduled when the failure is known.
//
// Prompt log probabilities (prompt_logprobs, echo with logprobs): the scheduled chunks'
// scored positions become prompt rows after the sampling rows (prompt_scores.h); a request
// with max_tokens 0 samples nothing: its sequence ends when its prompt is computed.
//
// Each batch runs on its own scheduler (start_batch); the counts go to the engine's stats
// given at construction, and the records of finished requests wait for take_records().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/grammar_cache.h"
#include "engine/prepared_request.h"
#include "engine/prompt_scores.h"
#include "engine/step_result.h"
#include "grammar/grammar_matcher.h"
#include "io/output_record.h"
#include "sample/rng.h"
#include "sample/sampling_batch.h"
#include "sample/stop_checker.h"
#include "sched/scheduler.h"
#include "step/overlap_token.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class OutputProcessor {
 public:
  // `tokenizer` null: no text and no grammar (dry runs); samples then end by length only.
  // `stats` (the engine's) must outlive the processor.
  OutputProcessor(const Tokenizer* tokenizer, uint64_t run_seed, int64_t max_model_len, EngineStats& stats);

  // Takes a batch's requests and queues their first samples in `order` (the plan's) on
  // `scheduler`, the batch's, which must outlive the batch. Compiles their grammars first:
  // Stopped when `stop` asks then, with nothing started.
  void start_batch(std::vector<PreparedRequest> requests, std::span<const int32_t> order, Scheduler& scheduler,
                   const StopToken& stop = {});

  // The requests the scheduler turned away: one error record each, once all their samples
  // are accounted for.
  void reject(std::span<const RejectedSequence> rejected);

  // Adds to `started` the requests whose first sample `out` admits for the first time.
  void note_starts(const SchedulerOutput& out, std::vector<RequestStart>& started);

  // The rows to sample after the step of `out` (draws each sample's random bits).
  SamplingBatch sampling_batch(const SchedulerOutput& out);

  // Applies the step's token ids (one per row of the last sampling_batch(), then one per
  // prompt row). A row with no token (unusable logits) fails its sample (a prompt row: its
  // request), and its request becomes an error record.
  void apply(std::span<const SampledToken> tokens);

  // Whether the rows of the last sampling_batch() may be overlapped: no token value could
  // end a sample or start one (stop ids, stop strings, grammars, forks).
  bool can_overlap() const;
  // Applies the last sampling_batch()'s rows without their tokens, which finish_overlap()
  // applies.
  void start_overlap();
  // A step was overlapped and its ids are not applied yet (it may have no rows: a chunk of
  // a prefill samples nothing, yet its ids, none, are collected in turn).
  bool has_overlapped_step() const { return overlapped_.has_value(); }
  // The input tokens of `out` that are placeholders of the overlapped step's rows.
  std::vector<OverlapToken> overlap_tokens(const SchedulerOutput& out) const;
  // The tokens of the overlapped step's rows (one per row, in order).
  void finish_overlap(std::span<const SampledToken> tokens);

  // The records of the requests finished since the last call, in the order they finished.
  std::vector<OutputRecord> take_records() { return std::exchange(records_, {}); }

 private:
  // Decoding state of one sample, beside its Sequence in the scheduler.
  struct SampleState {
    Rng rng;
    std::optional<IncrementalDecoder> decoder;  // none without a tokenizer
    StopChecker stop;
    std::optional<GrammarMatcher> grammar = {};  // a constrained response format's
    std::span<const uint32_t> allowed_ids = {};  // the request's allowed_token_ids mask (RequestState's)
    std::vector<uint32_t> allowed_tokens = {};   // for the next token: grammar's mask & allowed_ids (token_bitmask.h)
    std::vector<GeneratedTokenLogprobs> logprobs = {};  // [generated] when the request asks for them
    int64_t num_text_chars = 0;                         // characters the decoder gave so far
    bool failed = false;  // a row gave no token; its sequence runs one last step, unsampled
  };
  // A request while its samples run.
  struct RequestState {
    std::vector<std::optional<Completion>> choices;  // [n]
    int32_t num_finished = 0;
    int64_t cached_tokens = 0;
    std::vector<uint32_t> allowed_ids;  // allowed_token_ids as a mask (allowed_token_ids.h); empty: none
    bool forked = false;
    bool started = false;
    std::optional<RequestError> error;
  };
  // What one sampling row extends: a running sample, or a sample of a fork not yet created.
  struct PlannedRow {
    uint64_t seq_id = 0;                           // the running sequence whose logits it reads
    std::unique_ptr<SampleState> child = nullptr;  // set for a new sample of an n > 1 fork
    int32_t child_index = 0;                       // its sample index
    int64_t request_index = 0;
    int32_t num_tokens = 0;                 // the sequence's tokens when planned: the new one goes here
    std::optional<Sequence> finished = {};  // overlapped: the sequence it ended (by length)
    bool discarded = false;                 // a failed sample's last step: no token to apply
  };

  // The rows a step overlapped, waiting for their tokens.
  struct OverlappedStep {
    std::vector<PlannedRow> rows;
  };

  std::unique_ptr<SampleState> new_sample(int64_t request_index, int32_t sample_index);
  // The grammars of `requests`' constrained formats, compiled (or found) in the cache; held
  // by the caller so that none is dropped before its samples start.
  std::vector<std::shared_ptr<const CompiledGrammar>> compile_grammars(std::span<const PreparedRequest> requests,
                                                                       const StopToken& stop);
  // Records the token (a row's with an id); true when the sample is done.
  bool extend(SampleState& sample, const SampledToken& sampled, int32_t num_tokens);
  void record_logprobs(SampleState& sample, TokenId token, const TokenLogprobs& logprobs) const;
  // Whether the sample ends at its next token whatever it is (max_tokens, the model's length).
  bool ends_by_length(const PlannedRow& row, const SampleState& sample) const;
  // Ends a sample whose sequence `seq_id` ran its last step (see the header: failed rows).
  void end_failed_sequence(uint64_t seq_id);
  // Moves the sample's grammar past `token` and fills its next mask; true when nothing but
  // the end may follow (the value is closed).
  bool advance_grammar(SampleState& sample, TokenId token) const;
  void complete_sequence(const Sequence& finished, TokenId last, SampleState& sample);
  // The sample's Completion, from its generated `token_ids`.
  void complete_sample(const Sequence& sequence, int32_t sample_index, SampleState& sample,
                       std::vector<TokenId> token_ids);
  void finish_request_if_done(int64_t request_index);
  // Whether the sample's masks (allowed tokens, bad words, min_tokens) leave a token to pick.
  bool leaves_a_token(const PlannedRow& row, const SampleState& sample) const;
  // Fails the row's sample (the request's error record); the caller ends its sequence.
  void fail_row(PlannedRow& row);
  void start_child(const Sequence& parent, PlannedRow& row, const SampledToken& sampled);
  // The prompt rows' results; a request whose row gave none becomes an error record.
  void apply_prompt_rows(std::span<const SampledToken> results);
  // Ends the sequences of max_tokens 0 whose prompt the step computed: no token, length.
  void end_unsampled();
  // The request's record becomes a numerical_error with `message`, unless it has an error.
  void fail_request(int64_t request_index, std::string message);

  const Tokenizer* tokenizer_;
  std::optional<GrammarCache> grammars_;  // with a tokenizer
  std::vector<TokenId> end_of_generation_;
  uint64_t run_seed_;
  int64_t max_model_len_;
  EngineStats& stats_;
  Scheduler* scheduler_ = nullptr;                                      // the batch's
  std::vector<PreparedRequest> requests_;                               // the batch, input order
  std::vector<RequestState> states_;                                    // [requests_]
  std::unordered_map<uint64_t, std::unique_ptr<SampleState>> samples_;  // by sequence id
  std::vector<PlannedRow> planned_;                                     // the rows of the last sampling_batch()
  PromptScores prompt_scores_;                                          // and its prompt rows
  std::vector<uint64_t> unsampled_ends_;                                // its sequences that end unsampled
  std::optional<OverlappedStep> overlapped_;
  std::vector<OutputRecord> records_;  // finished requests', until take_records()
  uint64_t next_seq_id_ = 0;
};

}  // namespace pagedgen
