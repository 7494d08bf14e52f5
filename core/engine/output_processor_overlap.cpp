// OutputProcessor, applying a step before its tokens (the engine's overlap; the header
// says what it is). The rule that makes it exact: a step is overlapped only when the
// value of none of its tokens can change the scheduler's calls, so the scheduler sees the
// same calls, in the same order, as when each step's tokens are applied at once; the
// tokens are then applied where nothing but the sample's own record depends on them.
#include <unordered_map>
#include <utility>

#include "engine/output_processor.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// What a sequence holds for an overlapped token until its value arrives; the step that
// reads it takes it as an OverlapToken, and the scheduler computes no K/V from it before.
constexpr TokenId kPlaceholderToken = 0;

}  // namespace

// A row's token could change what the scheduler does next when it could end its sample by
// its value (a stop id or end-of-generation id, a stop string, a grammar's closed value:
// stop_checker.h), or when it starts a sample of a fork. A grammar's next mask needs the
// token too, and so do the penalties and bad words of several tokens, which read the
// sequence's tokens when the next step's sampling batch is built (logit_bias does not).
// Length ends and a failed sample's last step do not depend on the value. A step with
// prompt rows (prompt_scores.h) is never overlapped.
bool OutputProcessor::can_overlap() const {
  // Prompt rows are applied at once, and a scoring sequence that samples nothing ends at once.
  if (prompt_scores_.has_rows() || !unsampled_ends_.empty()) return false;
  for (const PlannedRow& row : planned_) {
    if (row.child) return false;
    const SampleState& sample = *samples_.at(row.seq_id);
    if (sample.failed) continue;
    if (sample.grammar) return false;
    const SamplingParams& params = requests_[static_cast<std::size_t>(row.request_index)].sampling;
    if (params.penalizes_tokens() || params.bans_after_tokens()) return false;
    if (sample.stop.num_tokens() + 1 < params.min_tokens) continue;  // no stop of any kind yet
    if (!params.stop_token_ids.empty() || (!params.ignore_eos && !end_of_generation_.empty())) return false;
    if (tokenizer_ != nullptr && !params.stop.empty()) return false;
  }
  return true;
}

// What apply() would do to the scheduler for these rows, whatever their tokens turn out to be.
void OutputProcessor::start_overlap() {
  PG_CHECK(!overlapped_, "a step overlapped while the last one waits for its tokens");
  PG_CHECK(can_overlap(), "start_overlap of a step whose tokens decide what comes next");
  for (PlannedRow& row : planned_) {
    const SampleState& sample = *samples_.at(row.seq_id);
    if (sample.failed) {
      end_failed_sequence(row.seq_id);
      row.discarded = true;
    } else if (ends_by_length(row, sample)) {
      row.finished = scheduler_->finish(row.seq_id);
    } else {
      scheduler_->append_token(row.seq_id, kPlaceholderToken);
    }
  }
  overlapped_.emplace(OverlappedStep{.rows = std::exchange(planned_, {})});
}

std::vector<OverlapToken> OutputProcessor::overlap_tokens(const SchedulerOutput& out) const {
  std::vector<OverlapToken> tokens;
  if (!overlapped_) return tokens;
  const std::vector<PlannedRow>& rows = overlapped_->rows;
  std::unordered_map<uint64_t, int32_t> row_of;  // sequence -> its overlapped row
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].finished && !rows[i].discarded) row_of.emplace(rows[i].seq_id, static_cast<int32_t>(i));
  for (std::size_t i = 0; i < out.scheduled.size(); ++i) {
    const auto it = row_of.find(out.scheduled[i].seq_id);
    if (it == row_of.end()) continue;  // not scheduled in this step (preempted, or no tokens left in the budget)
    // A placeholder is its sequence's last token, so the chunk that computes it ends there.
    const int32_t token_index = out.batch.query_start[i + 1] - 1;
    PG_CHECK(out.scheduled[i].needs_logits && out.batch.positions[static_cast<std::size_t>(token_index)] ==
                                                  rows[static_cast<std::size_t>(it->second)].num_tokens,
             "sequence {}'s overlapped token is not the end of its chunk", it->first);
    tokens.push_back({.token_index = token_index, .sampling_row = it->second});
  }
  return tokens;
}

void OutputProcessor::finish_overlap(std::span<const SampledToken> tokens) {
  PG_CHECK(overlapped_, "finish_overlap with no step overlapped");
  std::vector<PlannedRow>& rows = overlapped_->rows;
  PG_CHECK(tokens.size() == rows.size(), "{} token ids for {} overlapped rows", tokens.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    PlannedRow& row = rows[i];
    if (row.discarded) continue;
    if (!tokens[i].id) {
      fail_row(row);
      if (row.finished)
        samples_.erase(row.seq_id);
      else
        scheduler_->set_token(row.seq_id, row.num_tokens, kFailedRowInputToken);  // what the next step read
      continue;
    }
    const TokenId token = *tokens[i].id;
    states_[static_cast<std::size_t>(row.request_index)].forked = true;
    SampleState& sample = *samples_.at(row.seq_id);
    const bool ended = extend(sample, tokens[i], row.num_tokens);
    PG_CHECK(ended == row.finished.has_value(), "token {} of sequence {} {} its sample, overlapped as {}", token,
             row.seq_id, ended ? "ends" : "continues", row.finished ? "ended" : "continuing");
    if (!ended) {
      scheduler_->set_token(row.seq_id, row.num_tokens, token);
      continue;
    }
    complete_sequence(*row.finished, token, sample);
  }
  overlapped_.reset();
}

}  // namespace pagedgen
