#include "engine/prompt_scores.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {

void PromptScores::add_rows(const ScheduledSequence& s, const Sequence& seq, const PreparedRequest& r,
                            SamplingBatch& batch) {
  if (s.num_prompt_logits_rows == 0) return;
  const std::optional<int32_t> num_top = r.sampling.prompt_scoring_top();
  PG_CHECK(num_top.has_value(), "sequence {} scores a prompt its request does not ask for", seq.id);
  std::vector<TokenLogprobs>& scores = scores_[seq.request_index];
  scores.resize(static_cast<std::size_t>(seq.num_prompt_tokens));
  for (int32_t j = 0; j < s.num_prompt_logits_rows; ++j) {
    const int32_t position = s.num_computed_tokens + j + 1;  // scored by the logits of the position before
    batch.prompt_rows.push_back({.logits_row = s.first_logits_row + j,
                                 .token = seq.token_ids[static_cast<std::size_t>(position)],
                                 .num_top = *num_top});
    rows_.push_back({seq.request_index, position});
  }
}

std::vector<int64_t> PromptScores::apply(std::span<const SampledToken> results) {
  PG_CHECK(results.size() == rows_.size(), "{} results for {} prompt rows", results.size(), rows_.size());
  std::vector<int64_t> failed;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    if (!results[i].logprobs) {
      failed.push_back(row.request_index);
      continue;
    }
    scores_.at(row.request_index)[static_cast<std::size_t>(row.position)] = *results[i].logprobs;
  }
  rows_.clear();
  return failed;
}

std::vector<GeneratedTokenLogprobs> PromptScores::entries(const PreparedRequest& r,
                                                          std::span<const TokenLogprobs> scores,
                                                          int32_t num_top) const {
  const auto bytes = [&](TokenId id) { return tokenizer_ ? tokenizer_->token_bytes(id, true) : std::string(); };
  std::optional<IncrementalDecoder> decoder;
  if (tokenizer_) decoder.emplace(*tokenizer_, false, true);
  std::vector<GeneratedTokenLogprobs> out;
  int64_t num_text_chars = 0;
  for (std::size_t i = 0; i < r.prompt_ids.size(); ++i) {
    const TokenId id = r.prompt_ids[i];
    GeneratedTokenLogprobs& entry = out.emplace_back();
    entry.token = LogprobToken{id, bytes(id), 0.0f};
    entry.text_offset = num_text_chars;
    if (i > 0) {
      const TokenLogprobs& score = scores[i];
      entry.token.logprob = score.logprob;
      entry.rank = score.rank;
      const auto num_kept = std::min(score.top.size(), static_cast<std::size_t>(num_top));
      for (std::size_t j = 0; j < num_kept; ++j)
        entry.top.push_back(LogprobToken{score.top[j].id, bytes(score.top[j].id), score.top[j].logprob});
    }
    if (decoder) num_text_chars += utf8_num_code_points(decoder->push(id));
  }
  return out;
}

void PromptScores::fill_output(int64_t request_index, const PreparedRequest& r, RequestOutput& output) {
  output.echo_text = r.echo_text;
  const SamplingParams& params = r.sampling;
  if (!params.prompt_scoring_top()) return;
  const auto found = scores_.find(request_index);
  // A one-token prompt has no scored position, hence no rows.
  PG_CHECK(found != scores_.end() || r.prompt_ids.size() == 1, "line {}: prompt scores missing", r.index + 1);
  const std::vector<TokenLogprobs> scores =
      found != scores_.end() ? std::move(found->second) : std::vector<TokenLogprobs>(r.prompt_ids.size());
  if (found != scores_.end()) scores_.erase(found);
  if (params.prompt_logprobs) output.prompt_logprobs = entries(r, scores, *params.prompt_logprobs);
  if (params.echo && params.logprobs) output.echo_logprobs = entries(r, scores, *params.logprobs);
}

}  // namespace pagedgen
