// PromptScores: the prompt log probabilities of a batch (prompt_logprobs, and echo with
// logprobs). Each step it turns the scheduled chunks' scored positions into prompt rows of
// the sampling batch (the backend computes them beside the sampled rows), keeps each
// request's results by position, and writes them into the request's output when it ends.
//
//   prompt       t0    t1    t2    t3
//   entry        null  lp1   lp2   lp3      lp_i = log p(t_i | t0 .. t_i-1), from the logits
//   logits of    -     pos0  pos1  pos2     of position i - 1 (SamplingBatch's picture)
//
// A preempted sequence computes its prompt again: its rows come again with the same
// values and overwrite the first ones.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/prepared_request.h"
#include "io/output_record.h"
#include "sample/sampling_batch.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

class PromptScores {
 public:
  // `tokenizer` null: entries carry ids and values, no bytes (dry runs).
  explicit PromptScores(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}

  // Forgets the last batch's results.
  void start_batch() { scores_.clear(); }
  // Appends the scored positions of the chunk `s` of `seq` (request `r`) to batch.prompt_rows.
  void add_rows(const ScheduledSequence& s, const Sequence& seq, const PreparedRequest& r, SamplingBatch& batch);
  // Rows added since the last apply().
  bool has_rows() const { return !rows_.empty(); }
  // Records one result per row added since the last call; returns the requests of the rows
  // that gave none (their logits were not usable).
  std::vector<int64_t> apply(std::span<const SampledToken> results);
  // Moves request `request_index`'s entries into `output` (prompt_logprobs, echo_logprobs)
  // as `r` asks, and its echo text.
  void fill_output(int64_t request_index, const PreparedRequest& r, RequestOutput& output);

 private:
  struct Row {
    int64_t request_index = 0;
    int32_t position = 0;  // the scored token's index in the prompt (>= 1)
  };
  // The prompt's entries with `num_top` alternatives each (see output_record.h).
  std::vector<GeneratedTokenLogprobs> entries(const PreparedRequest& r, std::span<const TokenLogprobs> scores,
                                              int32_t num_top) const;

  const Tokenizer* tokenizer_;
  std::vector<Row> rows_;                                           // of the step being run
  std::unordered_map<int64_t, std::vector<TokenLogprobs>> scores_;  // [prompt tokens] by request; entry 0 unused
};

}  // namespace pagedgen
