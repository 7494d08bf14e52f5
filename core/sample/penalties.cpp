#include "sample/penalties.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

sampling::Penalties penalties_of(const SamplingParams& params) {
  return sampling::Penalties{params.presence_penalty, params.frequency_penalty, params.repetition_penalty};
}

// Sorting a copy of the tokens costs O(L log L) per step for a sequence of L tokens, beside
// the O(vocab) of sampling; it keeps no state between steps, so a preempted or forked
// sample needs nothing rebuilt.
void find_penalized_tokens(const SamplingParams& params, std::span<const TokenId> tokens, int32_t num_generated,
                           std::size_t vocab_size, std::vector<TokenPenalty>& out, std::vector<TokenId>& scratch) {
  PG_CHECK(num_generated >= 0 && static_cast<std::size_t>(num_generated) <= tokens.size(),
           "{} generated tokens in a sequence of {}", num_generated, tokens.size());
  out.clear();
  const std::size_t num_prompt = tokens.size() - static_cast<std::size_t>(num_generated);
  const auto in_vocab = [&](TokenId id) { return id >= 0 && static_cast<std::size_t>(id) < vocab_size; };
  // Generated ids first, sorted: runs of equal ids give the counts.
  scratch.assign(tokens.begin() + static_cast<std::ptrdiff_t>(num_prompt), tokens.end());
  std::sort(scratch.begin(), scratch.end());
  for (std::size_t i = 0; i < scratch.size();) {
    std::size_t j = i;
    while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
    if (in_vocab(scratch[i])) out.push_back({scratch[i], 0.0, static_cast<int32_t>(j - i), true});
    i = j;
  }
  const std::size_t num_generated_ids = out.size();
  if (params.repetition_penalty != 1.0) {
    scratch.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(num_prompt));
    std::sort(scratch.begin(), scratch.end());
    scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    for (const TokenId id : scratch)
      if (in_vocab(id)) out.push_back({id, 0.0, 0, true});
  }
  for (const LogitBias& entry : params.logit_bias)
    if (in_vocab(entry.id)) out.push_back({entry.id, entry.bias, 0, false});
  if (out.size() == num_generated_ids) return;
  // Merge the entries of one id: counts from the generated part, in_sequence from either,
  // the bias from logit_bias (each id at most once there).
  std::stable_sort(out.begin(), out.end(), [](const TokenPenalty& a, const TokenPenalty& b) { return a.id < b.id; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[kept - 1].id == out[i].id) {
      TokenPenalty& merged = out[kept - 1];
      merged.bias += out[i].bias;
      merged.num_times_generated += out[i].num_times_generated;
      merged.in_sequence = merged.in_sequence || out[i].in_sequence;
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
}

std::span<const float> LogitPenalizer::apply(std::span<const float> logits, const SamplingParams& params,
                                             std::span<const TokenId> tokens, int32_t num_generated) {
  find_penalized_tokens(params, tokens, num_generated, logits.size(), changed_, scratch_);
  row_.assign(logits.begin(), logits.end());
  const sampling::Penalties penalties = penalties_of(params);
  for (const TokenPenalty& t : changed_) {
    const auto i = static_cast<std::size_t>(t.id);
    row_[i] = sampling::penalized_logit(logits[i], t.bias, t.in_sequence, t.num_times_generated, penalties);
  }
  return row_;
}

}  // namespace pagedgen
